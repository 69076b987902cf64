import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { RevokedGrantsService } from '../auth/revoked-grants.service';
import { AppConfig } from '../config/app-config';
import { withTryLock } from '../database/locked-write';
import { CLOCK_SKEW_SECONDS } from '../keys/keys.config';
import { MetricsService } from '../metrics/metrics.service';
import { OAuthConfig } from './oauth.config';
import { type PruneStep, RetentionRepository } from './retention.repository';

import { SecondFactorsService } from '../mfa/second-factors.service';
import { PasskeysService } from '../mfa/passkeys.service';
import { DpopProofsRepository } from '../auth/dpop-proofs.repository';
import { DeviceAuthorizationsRepository } from './device/device-authorizations.repository';
import { PushedRequestsService } from './par/pushed-requests.service';
/** The PostgreSQL advisory lock key of the pruning job (an arbitrary constant of this service: "oauthprn"). */
const PRUNE_LOCK_KEY = '6f61757468707266';
/**
 * Rows deleted by one statement, and the pause after it: a hot-path write waits behind one short delete at most
 * (see docs/revocation.md, Retention).
 */
const BATCH_ROWS = { postgres: 2_000, sqlite: 1_000 } as const;
const BATCH_PAUSE_MS = 50;

/**
 * Retention: every PRUNE_INTERVAL_SECONDS (default 600; 0: never) one instance at a time (PostgreSQL: an advisory
 * lock that the others skip on) deletes what nothing can use any more — codes never redeemed, ended grants with their codes and refresh
 * tokens, expired sessions, used client-assertion ids, sign-ins that waited for a second factor in vain, and
 * revoked-list entries — in batches of a few thousand
 * rows with a pause between them, so the hot paths never wait behind a long delete. Consents go with their client
 * or person (foreign keys). Counted in `pruned_rows_total{table}`.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RetentionService.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Record<string, number>> | undefined;
  private stopped = false;

  constructor(
    private readonly rows: RetentionRepository,
    private readonly revoked: RevokedGrantsService,
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly oauthConfig: OAuthConfig,
    private readonly metrics: MetricsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly pushedRequests: PushedRequestsService,
    private readonly dpopProofs: DpopProofsRepository,
    private readonly deviceRequests: DeviceAuthorizationsRepository,
  ) {}

  onApplicationBootstrap(): void {
    const seconds = this.oauthConfig.pruneIntervalSeconds;
    if (seconds === 0) return;
    // A random first run within the interval: instances started together do not all try at once.
    const first = setTimeout(
      () => {
        void this.prune();
        this.timer = setInterval(() => void this.prune(), seconds * 1000).unref();
      },
      Math.random() * seconds * 1000,
    ).unref();
    this.timer = first;
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.timer);
  }

  /**
   * One pruning run (at `now`): the rows deleted per table, or nothing when another instance is pruning. A run
   * already under way here is not started twice. Failures are logged; the next run goes on where this one stopped.
   */
  prune(now = Date.now()): Promise<Record<string, number>> {
    this.running ??= this.pruneLocked(now)
      .catch((error: unknown) => {
        this.logger.warn(`could not prune expired rows: ${(error as Error).message}`);
        return {};
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** One instance at a time (PostgreSQL: the others skip the run); nothing when another instance holds the lock. */
  private async pruneLocked(now: number): Promise<Record<string, number>> {
    return (await withTryLock(this.dataSource, PRUNE_LOCK_KEY, () => this.pruneAll(now))) ?? {};
  }

  private async pruneAll(now: number): Promise<Record<string, number>> {
    const tokensLiveFor = (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000;
    const cutoffs = { now, grant: now - tokensLiveFor };
    const batch = this.dataSource.options.type === 'postgres' ? BATCH_ROWS.postgres : BATCH_ROWS.sqlite;
    const deleted: Record<string, number> = {};
    const steps: PruneStep[] = [
      ...this.rows.steps(),
      // Sign-ins that waited for a second factor in vain.
      { table: 'login_challenges', cutoff: 'now', deleteBatch: (at, size) => this.secondFactors.deleteExpiredChallenges(at, size) },
      // Pushed authorization requests past their lifetime, used or not.
      { table: 'pushed_requests', cutoff: 'now', deleteBatch: (at, size) => this.pushedRequests.deleteExpired(at, size) },
      // Device authorization requests past their lifetime, answered or not.
      { table: 'device_authorizations', cutoff: 'now', deleteBatch: (at, size) => this.deviceRequests.deleteExpired(at, size) },
      // Used DPoP proofs too old to be accepted again anyway.
      { table: 'dpop_proofs', cutoff: 'now', deleteBatch: (at, size) => this.dpopProofs.deleteExpired(at, size) },
      // Passkey challenges no browser answered.
      { table: 'webauthn_challenges', cutoff: 'now', deleteBatch: (at, size) => this.passkeys.deleteExpiredChallenges(at, size) },
      // Revoked-list entries past the life of every token they cover.
      { table: 'revoked_grants', cutoff: 'now', deleteBatch: (at, size) => this.revoked.deleteExpired(at, size) },
    ];
    for (const { table, deleteBatch, cutoff } of steps) {
      for (;;) {
        if (this.stopped) return deleted;
        const affected = await deleteBatch(cutoffs[cutoff], batch);
        deleted[table] = (deleted[table] ?? 0) + affected;
        if (affected > 0) this.metrics.rowsPruned(table, affected);
        if (affected < batch) break;
        await sleep(BATCH_PAUSE_MS);
      }
    }
    return deleted;
  }
}
