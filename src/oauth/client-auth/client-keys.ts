import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { type PublicJwk, checkedJwks } from './client-jwks';
import type { Client } from '../entities/client.entity';
import { RemoteJsonFetcher } from '../remote-json';

/** How long a fetched `jwks_uri` document is used before it is fetched again. */
const JWKS_URI_TTL_MS = 5 * 60_000;
/** At most one early fetch per client and this interval, however many requests ask for one (a flood of unknown `kid`s). */
const MIN_REFRESH_MS = 30_000;
const CACHE_MAX = 1_000;

interface Fetched {
  url: string;
  keys: PublicJwk[];
  at: number;
  /** When an early fetch ({@link ClientKeys.keysOf} with `refresh`) was last made for this URL. */
  refreshedAt: number;
}

/**
 * The public keys a `private_key_jwt` client signs with: its inline `jwks` as registered, or the JWK Set at its
 * `jwks_uri` (fetched through {@link RemoteJsonFetcher}, checked as an inline set is, kept a few minutes per
 * instance). `refresh` asks for the `jwks_uri` again before its time, to pick up a rotated key; it is honoured at
 * most once per client per {@link MIN_REFRESH_MS}.
 */
@Injectable()
export class ClientKeys {
  private readonly logger = new Logger(ClientKeys.name);
  private readonly fetched = new LRUCache<string, Fetched>({ max: CACHE_MAX }); // reused for JWKS_URI_TTL_MS (see keysOf)
  private readonly pending = new Map<string, Promise<PublicJwk[]>>();

  constructor(private readonly remote: RemoteJsonFetcher) {}

  async keysOf(client: Pick<Client, 'id' | 'jwks' | 'jwksUri'>, options: { refresh?: boolean } = {}): Promise<PublicJwk[]> {
    if (client.jwks) return client.jwks.keys;
    if (!client.jwksUri) return [];
    const now = Date.now();
    const cached = this.fetched.get(client.id);
    const current = cached?.url === client.jwksUri ? cached : undefined;
    if (current && now - current.at < JWKS_URI_TTL_MS) {
      if (!options.refresh || now - current.refreshedAt < MIN_REFRESH_MS) return current.keys;
      return this.fetch(client.id, client.jwksUri, current, now);
    }
    return this.fetch(client.id, client.jwksUri, current, current?.refreshedAt ?? 0);
  }

  /** One fetch at a time per client; a failed fetch keeps the keys fetched before (and counts as a fetch). */
  private fetch(clientId: string, url: string, previous: Fetched | undefined, refreshedAt: number): Promise<PublicJwk[]> {
    const running = this.pending.get(clientId);
    if (running) return running;
    const fetching = (async () => {
      let keys = previous?.keys ?? [];
      try {
        keys = checkedJwks(await this.remote.fetchJson(url)).keys;
      } catch (error) {
        this.logger.warn(`could not use the jwks_uri of client ${clientId}: ${(error as Error).message}`);
      }
      this.fetched.set(clientId, { url, keys, at: Date.now(), refreshedAt });
      return keys;
    })().finally(() => this.pending.delete(clientId));
    this.pending.set(clientId, fetching);
    return fetching;
  }
}
