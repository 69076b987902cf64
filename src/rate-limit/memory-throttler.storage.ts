import type { OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { LRUCache } from 'lru-cache';

/** What `increment` answers (the throttler does not export the type from its entry point). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** Windows kept at most: about 15 MB of heap when full. */
export const MAX_WINDOWS = 100_000;

interface Window {
  hits: number;
  endsAt: number;
  /** Until when the key is refused after it went over its limit (0: not blocked; never before `endsAt`). */
  blockedUntil: number;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Rate-limit counters in this process (no REDIS_URL): a fixed window per key, as the Redis storage counts them,
 * so one instance and several behave alike. A hit costs one map lookup, where the throttler's default storage
 * filters the key's whole list of hit times on every request. Ended windows are swept once a minute, and at most
 * {@link MAX_WINDOWS} are kept (the least recently hit go first): a flood of new addresses cannot fill the heap.
 *
 * A budget's `blockDuration` is honoured: a key that goes over its limit is refused for that long (at least until
 * its window ends), and the hits it makes meanwhile are not counted. 0 refuses it until the window ends.
 */
export class MemoryThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly windows = new LRUCache<string, Window>({ max: MAX_WINDOWS });
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 60_000) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepEveryMs);
    this.sweeper.unref();
  }

  increment(key: string, ttl: number, limit: number, blockDuration: number, name: string): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    const id = `${name}:${key}`;
    let window = this.windows.get(id);
    if (window && window.blockedUntil > now) {
      const timeToBlockExpire = seconds(window.blockedUntil - now);
      return Promise.resolve({ totalHits: window.hits, timeToExpire: seconds(window.endsAt - now), isBlocked: true, timeToBlockExpire });
    }
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + ttl, blockedUntil: 0 };
      this.windows.set(id, window);
    }
    window.hits++;
    const isBlocked = window.hits > limit;
    if (isBlocked && blockDuration > 0) window.blockedUntil = Math.max(now + blockDuration, window.endsAt);
    const timeToExpire = seconds(window.endsAt - now);
    const timeToBlockExpire = !isBlocked ? 0 : window.blockedUntil ? seconds(window.blockedUntil - now) : timeToExpire;
    return Promise.resolve({ totalHits: window.hits, timeToExpire, isBlocked, timeToBlockExpire });
  }

  private sweep(now: number): void {
    const ended = [...this.windows.entries()].filter(([, w]) => Math.max(w.endsAt, w.blockedUntil) <= now).map(([id]) => id);
    for (const id of ended) this.windows.delete(id);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }
}
