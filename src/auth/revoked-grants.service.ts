import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, LessThan, MoreThan, type Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { AuthConfig } from './auth.config';
import { CLOCK_SKEW_SECONDS } from '../keys/signing-keys.service';
import { RevokedGrant } from './revoked-grant.entity';

/**
 * The ids of revoked grants whose access tokens may still be unexpired, held in memory and refreshed from the
 * database every REVOCATION_SYNC_SECONDS, so that the resource server rejects them without a query per request.
 */
@Injectable()
export class RevokedGrantsService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RevokedGrantsService.name);
  private revoked = new Map<string, number>();
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

  isRevoked(grantId: string): boolean {
    const until = this.revoked.get(grantId);
    return until !== undefined && until > Date.now();
  }

  /** Records grants as revoked (in the caller's transaction when one is given) and applies it here at once. */
  async revoke(grantIds: string[], manager?: EntityManager): Promise<void> {
    if (grantIds.length === 0) return;
    const now = Date.now();
    const expiresAt = now + (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000;
    const repo = manager ? manager.getRepository(RevokedGrant) : this.repo;
    await repo
      .createQueryBuilder()
      .insert()
      .values(grantIds.map((grantId) => ({ grantId, revokedAt: now, expiresAt })))
      .orIgnore()
      .execute();
    for (const id of grantIds) this.revoked.set(id, expiresAt);
  }

  async sync(): Promise<void> {
    try {
      const now = Date.now();
      const rows = await this.repo.find({ where: { expiresAt: MoreThan(now) }, select: { grantId: true, expiresAt: true } });
      const next = new Map(rows.map((r) => [r.grantId, r.expiresAt]));
      // Keep local revocations a concurrent sync may not have seen yet.
      for (const [id, until] of this.revoked) if (until > now && !next.has(id)) next.set(id, until);
      this.revoked = next;
      if (Math.random() < 0.02) await this.repo.delete({ expiresAt: LessThan(now) });
    } catch (error) {
      this.logger.warn(`could not refresh revoked grants: ${(error as Error).message}`);
    }
  }
}
