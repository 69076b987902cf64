import { afterEach, describe, expect, it } from 'vitest';
import { MAX_WINDOWS, MemoryThrottlerStorage } from './memory-throttler.storage';

describe('MemoryThrottlerStorage', () => {
  let storage: MemoryThrottlerStorage;
  afterEach(() => storage.onApplicationShutdown());

  it('counts hits per key in a fixed window and blocks past the limit', async () => {
    storage = new MemoryThrottlerStorage();
    const hits = [];
    for (let i = 0; i < 3; i++) hits.push(await storage.increment('1.2.3.4', 60_000, 2, 0, 'login'));
    expect(hits.map((h) => [h.totalHits, h.isBlocked])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect((await storage.increment('1.2.3.4', 60_000, 2, 0, 'token')).totalHits).toBe(1);
  });

  it(`keeps at most ${MAX_WINDOWS} windows, the least recently hit going first`, async () => {
    storage = new MemoryThrottlerStorage();
    await storage.increment('first', 60_000, 10, 0, 'login');
    await storage.increment('kept', 60_000, 10, 0, 'login');
    for (let i = 0; i < MAX_WINDOWS - 1; i++) {
      if (i === MAX_WINDOWS / 2) await storage.increment('kept', 60_000, 10, 0, 'login');
      await storage.increment(`flood-${i}`, 60_000, 10, 0, 'login');
    }
    // 'first' was pushed out (its count starts again); 'kept', hit since, still counts.
    expect((await storage.increment('first', 60_000, 10, 0, 'login')).totalHits).toBe(1);
    expect((await storage.increment('kept', 60_000, 10, 0, 'login')).totalHits).toBe(3);
  });
});
