import { Injectable } from '@nestjs/common';
import { SafeFetcher } from '../safe-fetch/safe-fetcher';
import { ClientMetadataConfig } from './clients/cimd/client-metadata.config';

/**
 * Fetches a JSON document from a URL a client registered (its `jwks_uri`). Whoever implements it decides what may
 * be fetched; a failure of any kind is a rejected promise.
 */
export abstract class RemoteJsonFetcher {
  abstract fetchJson(url: string): Promise<unknown>;
}

/** A JWK Set of the largest size a client may register (8 KB of JSON), with room for whitespace. */
const MAX_JWKS_BYTES = 16 * 1024;

/**
 * The {@link RemoteJsonFetcher} of this service: the {@link SafeFetcher} (https only, no redirects, every resolved
 * address checked and the connection pinned to it) under the operator's policy for client-published documents
 * (`CIMD_ALLOWED_HOSTS`, `CIMD_DENIED_HOSTS`, `CIMD_CA_FILE`, `CIMD_TIMEOUT_MS`): a client's `jwks_uri` is as much
 * the client's choice as its metadata document's URL.
 */
@Injectable()
export class SafeRemoteJson extends RemoteJsonFetcher {
  constructor(
    private readonly fetcher: SafeFetcher,
    private readonly config: ClientMetadataConfig,
  ) {
    super();
  }

  async fetchJson(url: string): Promise<unknown> {
    const { policy, ca, timeoutMs } = this.config;
    return (await this.fetcher.json(url, { policy, ca, timeoutMs, maxBytes: Math.max(MAX_JWKS_BYTES, this.config.maxBytes) })).body;
  }
}
