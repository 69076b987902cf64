import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { withTryLock } from '../database/locked-write';
import { MetricsService } from '../metrics/metrics.service';
import { ExpiringRows, type PruneStep, type PruneSteps } from './retention-step';
import { RetentionConfig } from './retention.config';

/** The PostgreSQL advisory lock key of the pruning job (an arbitrary constant of this service: "oauthprn"). */
const PRUNE_LOCK_KEY = '6f61757468707266';
/**
 * Rows deleted by one statement, and the pause after it: a hot-path write waits behind one short delete at most
 * (see docs/revocation.md, Retention).
 */
const BATCH_ROWS = { postgres: 2_000, sqlite: 1_000 } as const;
const BATCH_PAUSE_MS = 50;
/** The job's names in the scheduler's registry: its first run, then its interval. */
export const RETENTION_FIRST_RUN = 'retention.first-run';
export const RETENTION_INTERVAL = 'retention';

/**
 * Retention: every PRUNE_INTERVAL_SECONDS (default 600; 0: never) one instance at a time (PostgreSQL: an advisory
 * lock that the others skip on) runs every module's prune steps ({@link ExpiringRows}), each in batches of a few
 * thousand rows with a pause between them, so the hot paths never wait behind a long delete. Counted in
 * `pruned_rows_total{table}`.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RetentionService.name);
  private steps: readonly PruneStep[] = [];
  private running: Promise<Record<string, number>> | undefined;
  private stopped = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scheduler: SchedulerRegistry,
    private readonly dataSource: DataSource,
    private readonly config: RetentionConfig,
    private readonly metrics: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    // Each module's contribution once, even when its provider is listed by two modules.
    const contributors = new Map(
      this.discovery.getProviders({ metadataKey: ExpiringRows.KEY }).map((wrapper) => [wrapper.metatype, wrapper.instance as PruneSteps]),
    );
    this.steps = [...contributors.values()].flatMap((contributor) => contributor.pruneSteps());
    const every = this.config.pruneIntervalSeconds * 1000;
    if (every === 0) return;
    // A random first run within the interval: instances started together do not all try at once. The timers do
    // not keep the process alive; the scheduler clears them when the application shuts down.
    const first = setTimeout(() => {
      this.scheduler.deleteTimeout(RETENTION_FIRST_RUN);
      if (this.stopped) return;
      void this.prune();
      this.scheduler.addInterval(RETENTION_INTERVAL, setInterval(() => void this.prune(), every).unref());
    }, Math.random() * every).unref();
    this.scheduler.addTimeout(RETENTION_FIRST_RUN, first);
  }

  onModuleDestroy(): void {
    this.stopped = true;
  }

  /**
   * One pruning run (at `now`): the rows deleted per table, or nothing when another instance is pruning. A run
   * already under way here is not started twice. Failures are logged; the next run goes on where this one stopped.
   */
  prune(now = Date.now()): Promise<Record<string, number>> {
    if (this.stopped) return Promise.resolve({});
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
    const batch = this.dataSource.options.type === 'postgres' ? BATCH_ROWS.postgres : BATCH_ROWS.sqlite;
    const deleted: Record<string, number> = {};
    for (const step of this.steps) {
      const { table } = step;
      deleted[table] ??= 0;
      for (;;) {
        if (this.stopped) return deleted;
        const affected = await step.deleteBatch(now, batch);
        deleted[table] += affected;
        if (affected > 0) this.metrics.rowsPruned(table, affected);
        if (affected < batch) break;
        await sleep(BATCH_PAUSE_MS);
      }
    }
    return deleted;
  }
}
