import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_WINDOWS, MemoryThrottlerStorage } from './memory-throttler.storage';

describe('MemoryThrottlerStorage', () => {
  let storage: MemoryThrottlerStorage;
  afterEach(() => {
    storage.onApplicationShutdown();
    vi.useRealTimers();
  });

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

  describe('block duration (on a clock the test sets)', () => {
    const start = Date.UTC(2030, 0, 1);
    const at = (ms: number) => vi.setSystemTime(start + ms);
    const spent = async (hit: () => Promise<unknown>) => {
      await hit();
      await hit();
    };

    it('refuses a key for the block duration after it goes over its limit, past its window, without counting', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      at(0);
      storage = new MemoryThrottlerStorage();
      const hit = () => storage.increment('1.2.3.4', 10_000, 2, 60_000, 'login');
      await spent(hit);
      expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 10, isBlocked: true, timeToBlockExpire: 60 });
      at(30_000); // the window has ended, the block has not
      expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 1, isBlocked: true, timeToBlockExpire: 30 });
      at(60_000);
      expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 10, isBlocked: false, timeToBlockExpire: 0 });
    });

    it('blocks at least until the window ends when the block is shorter', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      at(0);
      storage = new MemoryThrottlerStorage();
      const hit = () => storage.increment('1.2.3.4', 10_000, 2, 1_000, 'login');
      await spent(hit);
      expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 10, isBlocked: true, timeToBlockExpire: 10 });
      at(9_000);
      expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 1, isBlocked: true, timeToBlockExpire: 1 });
      at(10_000);
      expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 10, isBlocked: false, timeToBlockExpire: 0 });
    });

    it('with a block duration of 0, refuses a key until its window ends, counting every hit', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      at(0);
      storage = new MemoryThrottlerStorage();
      const hit = () => storage.increment('1.2.3.4', 10_000, 2, 0, 'login');
      await spent(hit);
      expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 10, isBlocked: true, timeToBlockExpire: 10 });
      at(5_000);
      expect(await hit()).toEqual({ totalHits: 4, timeToExpire: 5, isBlocked: true, timeToBlockExpire: 5 });
      at(10_000);
      expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 10, isBlocked: false, timeToBlockExpire: 0 });
    });
  });
});
