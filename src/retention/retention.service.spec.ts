import type { DiscoveryService } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { DataSource } from 'typeorm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { MetricsService } from '../metrics/metrics.service';
import type { PruneStep, PruneSteps } from './retention-step';
import type { RetentionConfig } from './retention.config';
import { RETENTION_FIRST_RUN, RETENTION_INTERVAL, RetentionService } from './retention.service';

/** SQLite's batch (a data source that is not PostgreSQL runs the job without a lock). */
const BATCH = 1_000;
const NOW = 1_800_000_000_000;

/** A step that deletes the counts given, one per batch, and records what it was asked. */
function step(table: string, counts: number[]): PruneStep & { calls: [number, number][] } {
  const calls: [number, number][] = [];
  return {
    table,
    calls,
    deleteBatch: (now, batch) => {
      calls.push([now, batch]);
      return Promise.resolve(counts[calls.length - 1] ?? 0);
    },
  };
}

class Contributor implements PruneSteps {
  constructor(private readonly steps: PruneStep[]) {}
  pruneSteps(): PruneStep[] {
    return this.steps;
  }
}
class OtherContributor extends Contributor {}

/** The job over these providers (as discovery finds them), bootstrapped. */
function job(providers: { metatype: unknown; instance: PruneSteps }[], pruneIntervalSeconds = 0) {
  const scheduler = new SchedulerRegistry();
  const rowsPruned = vi.fn();
  const service = new RetentionService(
    { getProviders: () => providers } as unknown as DiscoveryService,
    scheduler,
    { options: { type: 'better-sqlite3' } } as DataSource,
    { pruneIntervalSeconds } as RetentionConfig,
    { rowsPruned } as unknown as MetricsService,
  );
  service.onApplicationBootstrap();
  return { service, scheduler, rowsPruned };
}

describe('the retention job', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it("runs every contributor's steps in order, each a batch at a time until one comes back short", async () => {
    const grants = step('grants', [BATCH, BATCH, 7]);
    const sessions = step('sessions', [0]);
    const events = step('audit_events', [3]);
    const { service, rowsPruned } = job([
      { metatype: Contributor, instance: new Contributor([grants, sessions]) },
      { metatype: OtherContributor, instance: new OtherContributor([events]) },
    ]);

    expect(await service.prune(NOW)).toEqual({ grants: 2_007, sessions: 0, audit_events: 3 });
    expect(grants.calls).toEqual([
      [NOW, BATCH],
      [NOW, BATCH],
      [NOW, BATCH],
    ]);
    expect(sessions.calls).toEqual([[NOW, BATCH]]);
    expect(events.calls).toEqual([[NOW, BATCH]]);
    expect(rowsPruned.mock.calls).toEqual([
      ['grants', BATCH],
      ['grants', BATCH],
      ['grants', 7],
      ['audit_events', 3],
    ]);
  });

  it('runs a contributor once when two modules list its provider', async () => {
    const sessions = step('sessions', [1]);
    const { service } = job([
      { metatype: Contributor, instance: new Contributor([sessions]) },
      { metatype: Contributor, instance: new Contributor([sessions]) },
    ]);
    expect(await service.prune(NOW)).toEqual({ sessions: 1 });
    expect(sessions.calls).toEqual([[NOW, BATCH]]);
  });

  it('does not start a run while one is under way: the second call shares the first', async () => {
    let finish: (rows: number) => void = () => undefined;
    const calls: number[] = [];
    const slow: PruneStep = {
      table: 'sessions',
      deleteBatch: (now) => {
        calls.push(now);
        return new Promise((resolve) => (finish = resolve));
      },
    };
    const { service } = job([{ metatype: Contributor, instance: new Contributor([slow]) }]);
    const first = service.prune(NOW);
    const second = service.prune(NOW + 1);
    expect(second).toBe(first);
    await vi.waitFor(() => expect(calls).toEqual([NOW]));
    finish(2);
    expect(await second).toEqual({ sessions: 2 });
  });

  it('stops between batches once the application shuts down, and starts no run after', async () => {
    const calls: number[] = [];
    // The application shuts down while the first batch is being deleted.
    const sessions: PruneStep = {
      table: 'sessions',
      deleteBatch: (now) => {
        calls.push(now);
        service.onModuleDestroy();
        return Promise.resolve(BATCH);
      },
    };
    const { service } = job([{ metatype: Contributor, instance: new Contributor([sessions]) }]);
    expect(await service.prune(NOW)).toEqual({ sessions: BATCH });
    expect(await service.prune(NOW)).toEqual({});
    expect(calls).toEqual([NOW]);
  });

  it('schedules a first run within PRUNE_INTERVAL_SECONDS, then one every PRUNE_INTERVAL_SECONDS', async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const sessions = step('sessions', []);
    const { scheduler } = job([{ metatype: Contributor, instance: new Contributor([sessions]) }], 600);
    expect(scheduler.getTimeouts()).toEqual([RETENTION_FIRST_RUN]);
    expect(scheduler.getIntervals()).toEqual([]);

    await vi.advanceTimersByTimeAsync(300_000);
    expect(sessions.calls).toHaveLength(1);
    expect(scheduler.getTimeouts()).toEqual([]);
    expect(scheduler.getIntervals()).toEqual([RETENTION_INTERVAL]);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(sessions.calls).toHaveLength(2);
    scheduler.deleteInterval(RETENTION_INTERVAL);
  });

  it('schedules nothing when PRUNE_INTERVAL_SECONDS is 0', () => {
    const { scheduler } = job([], 0);
    expect(scheduler.getTimeouts()).toEqual([]);
    expect(scheduler.getIntervals()).toEqual([]);
  });
});
