import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, MoreThan, type Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Statement, type Write } from '../database/sql';
import { AuthConfig } from './auth.config';
import { CLOCK_SKEW_SECONDS } from '../keys/signing-keys.service';
import type { AuthPrincipal } from './principal';
import { RevokedGrant } from './revoked-grant.entity';

/**
 * The ids of revoked grants whose access tokens may still be unexpired, held in memory and refreshed from the
 * database every REVOCATION_SYNC_SECONDS, so that the resource server rejects them without a query per request.
 */
/** The `gid` of a client's client-credentials tokens is this prefix and the client id. */
export const CLIENT_CREDENTIALS_GRANT_PREFIX = 'cc:';
/**
 * The tokens a client obtained by token exchange (RFC 8693) carry the person's grant as `gid`; this prefix and the
 * client id is the second entry they are checked against, put on the list when the client is deleted.
 */
const EXCHANGED_TOKENS_PREFIX = 'tx:';

/** The revoked-list entry of every token `clientId` obtained by token exchange until now. */
export function exchangedTokensId(clientId: string): string {
  return `${EXCHANGED_TOKENS_PREFIX}${clientId}`;
}

interface Revocation {
  at: number;
  until: number;
}

/** Revoked again (a client's client-credentials tokens): the later time counts. */
const UPSERT_REVOKED_GRANT = new Statement(`
  INSERT INTO revoked_grants (grant_id, revoked_at, expires_at) VALUES (:grantId, :now, :expiresAt)
  ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at, expires_at = excluded.expires_at`);

@Injectable()
export class RevokedGrantsService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RevokedGrantsService.name);
  /** Grant id -> when it was revoked and until when its access tokens could still be unexpired (epoch ms). */
  private revoked = new Map<string, Revocation>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    @InjectRepository(RevokedGrant) private readonly repo: Repository<RevokedGrant>,
    private readonly config: AppConfig,
    private readonly authConfig: AuthConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.sync();
    this.timer = setInterval(() => void this.sync(), this.authConfig.revocationSyncSeconds * 1000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Whether an access token of `grantId` issued at `issuedAt` (seconds) is revoked. A revoked grant's tokens all
   * are, whenever issued (one still in flight on another instance included). A client's client-credentials
   * "grant" ({@link CLIENT_CREDENTIALS_GRANT_PREFIX}) lives on: only its tokens issued up to the revocation are.
   */
  isRevoked(grantId: string, issuedAt: number): boolean {
    const revocation = this.revoked.get(grantId);
    if (revocation === undefined || revocation.until <= Date.now()) return false;
    const untilNow = grantId.startsWith(CLIENT_CREDENTIALS_GRANT_PREFIX) || grantId.startsWith(EXCHANGED_TOKENS_PREFIX);
    return !untilNow || issuedAt * 1000 <= revocation.at;
  }

  /**
   * Whether an access token is revoked: its grant ({@link isRevoked}), and for a token from a token exchange (it
   * has `act`) also every such token of its client ({@link exchangedTokensId}: the client was deleted).
   */
  isTokenRevoked(token: Pick<AuthPrincipal, 'grantId' | 'iat' | 'clientId' | 'act'>): boolean {
    if (this.isRevoked(token.grantId, token.iat)) return true;
    return token.act !== undefined && this.isRevoked(exchangedTokensId(token.clientId), token.iat);
  }

  /**
   * A grant's revocation as one of a group of atomic writes ({@link SqlRunner.atomic}); once they are committed,
   * {@link applied} makes it count here at once (other instances see it within REVOCATION_SYNC_SECONDS).
   */
  revocationWrite(grantId: string, now: number): Write {
    return { statement: UPSERT_REVOKED_GRANT, params: { grantId, now, expiresAt: this.expiryOf(now) } };
  }

  applied(grantIds: string[], now: number): void {
    for (const id of grantIds) this.revoked.set(id, { at: now, until: this.expiryOf(now) });
  }

  /** Until when a grant revoked at `now` stays on the list: its access tokens' longest life. */
  expiryOf(now: number): number {
    return now + (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000;
  }

  /** Records grants as revoked and applies it here at once. */
  async revoke(grantIds: string[]): Promise<void> {
    if (grantIds.length === 0) return;
    const now = Date.now();
    const expiresAt = this.expiryOf(now);
    // Revoked again (a client's client-credentials tokens): the later time counts.
    await this.repo
      .createQueryBuilder()
      .insert()
      .values(grantIds.map((grantId) => ({ grantId, revokedAt: now, expiresAt })))
      .orUpdate(['revoked_at', 'expires_at'], ['grant_id'])
      .execute();
    this.applied(grantIds, now);
  }

  async sync(): Promise<void> {
    try {
      const now = Date.now();
      const rows = await this.repo.find({
        where: { expiresAt: MoreThan(now) },
        select: { grantId: true, revokedAt: true, expiresAt: true },
      });
      const next = new Map(rows.map((r) => [r.grantId, { at: r.revokedAt, until: r.expiresAt }]));
      // Keep local revocations a concurrent sync may not have seen yet (or a later one of the same id).
      for (const [id, local] of this.revoked) {
        const synced = next.get(id);
        if (local.until > now && (!synced || synced.at < local.at)) next.set(id, local);
      }
      this.revoked = next;
      if (Math.random() < 0.02) await this.repo.delete({ expiresAt: LessThan(now) });
    } catch (error) {
      this.logger.warn(`could not refresh revoked grants: ${(error as Error).message}`);
    }
  }
}
