import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { SqlRunner, Statement } from '../database/sql';
import { CLOCK_SKEW_SECONDS } from '../keys/keys.config';
import { MetricsService } from '../metrics/metrics.service';
import { OAuthConfig } from './oauth.config';

/** The PostgreSQL advisory lock key of the pruning job (an arbitrary constant of this service: "oauthprn"). */
const PRUNE_LOCK_KEY = '6f61757468707266';
/**
 * Rows deleted by one statement, and the pause after it: a hot-path write waits behind one short delete at most.
 * A million expired sessions on PostgreSQL: 32 s at 0.8-0.9x the code flows/s (2,000 and 50 ms); 5,000 and 5 ms
 * took 10 s at 0.45-0.6x.
 */
const BATCH_ROWS = { postgres: 2_000, sqlite: 1_000 } as const;
const BATCH_PAUSE_MS = 50;

/**
 * Each statement deletes up to `:batch` rows (by key, through an index on what decides) of one table, planned at
 * each run with its cutoff (a prepared plan made while the tables were small would read them whole).
 */
const pruned = (source: string) => new Statement(source, { unprepared: true });

/**
 * What nothing can use any more, in the order it is deleted (children before their grants): each entry a table (as
 * the metric names it) and the statement that deletes a batch of its rows older than `:cutoff`.
 */
const STEPS: { table: string; statement: Statement; cutoff: 'now' | 'grant' }[] = [
  // Codes never redeemed, once expired. A redeemed code stays with its grant (deleted below): a replay of it is
  // recognised, and revokes the grant, as long as the grant lives.
  {
    table: 'authorization_codes',
    cutoff: 'now',
    statement: pruned(`DELETE FROM authorization_codes WHERE code_hash IN (
      SELECT code_hash FROM authorization_codes WHERE expires_at < :cutoff AND consumed_at IS NULL LIMIT :batch)`),
  },
  // The refresh tokens (rotated ones included, kept for reuse detection while the grant lives) of ended grants.
  {
    table: 'refresh_tokens',
    cutoff: 'grant',
    statement: pruned(`DELETE FROM refresh_tokens WHERE token_hash IN (
      SELECT r.token_hash FROM grants g JOIN refresh_tokens r ON r.grant_id = g.id WHERE g.expires_at < :cutoff LIMIT :batch)`),
  },
  {
    table: 'authorization_codes',
    cutoff: 'grant',
    statement: pruned(`DELETE FROM authorization_codes WHERE code_hash IN (
      SELECT c.code_hash FROM grants g JOIN authorization_codes c ON c.grant_id = g.id WHERE g.expires_at < :cutoff LIMIT :batch)`),
  },
  // A grant once it has ended and its last access token has expired (nothing refers to it then).
  {
    table: 'grants',
    cutoff: 'grant',
    statement: pruned(`DELETE FROM grants WHERE id IN (SELECT id FROM grants WHERE expires_at < :cutoff LIMIT :batch)`),
  },
  {
    table: 'sessions',
    cutoff: 'now',
    statement: pruned(`DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < :cutoff LIMIT :batch)`),
  },
  {
    table: 'client_assertion_jtis',
    cutoff: 'now',
    statement: pruned(`DELETE FROM client_assertion_jtis WHERE (client_id, jti_hash) IN (
      SELECT client_id, jti_hash FROM client_assertion_jtis WHERE expires_at < :cutoff LIMIT :batch)`),
  },
  // Revoked-list entries past the life of every token they cover.
  {
    table: 'revoked_grants',
    cutoff: 'now',
    statement: pruned(`DELETE FROM revoked_grants WHERE grant_id IN (
      SELECT grant_id FROM revoked_grants WHERE expires_at < :cutoff LIMIT :batch)`),
  },
];

/**
 * Retention: every PRUNE_INTERVAL_SECONDS (default 600; 0: never) one instance at a time (PostgreSQL: an advisory
 * lock that the others skip on) deletes what nothing can use any more — codes never redeemed, ended grants with their codes and refresh
 * tokens, expired sessions, used client-assertion ids, and revoked-list entries — in batches of a few thousand
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
    private readonly db: SqlRunner,
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly oauthConfig: OAuthConfig,
    private readonly metrics: MetricsService,
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

  private async pruneLocked(now: number): Promise<Record<string, number>> {
    if (!this.db.postgres) return this.pruneAll(now);
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      const [{ locked }] = (await runner.query(`SELECT pg_try_advisory_lock(x'${PRUNE_LOCK_KEY}'::bigint) AS locked`)) as {
        locked: boolean;
      }[];
      if (!locked) return {};
      try {
        return await this.pruneAll(now);
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(x'${PRUNE_LOCK_KEY}'::bigint)`);
      }
    } finally {
      await runner.release();
    }
  }

  private async pruneAll(now: number): Promise<Record<string, number>> {
    const tokensLiveFor = (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000;
    const cutoffs = { now, grant: now - tokensLiveFor };
    const batch = this.db.postgres ? BATCH_ROWS.postgres : BATCH_ROWS.sqlite;
    const deleted: Record<string, number> = {};
    for (const { table, statement, cutoff } of STEPS) {
      for (;;) {
        if (this.stopped) return deleted;
        const { affected } = await this.db.run(statement, { cutoff: cutoffs[cutoff], batch });
        deleted[table] = (deleted[table] ?? 0) + affected;
        if (affected > 0) this.metrics.rowsPruned(table, affected);
        if (affected < batch) break;
        await sleep(BATCH_PAUSE_MS);
      }
    }
    return deleted;
  }
}
