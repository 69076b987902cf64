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
}

/**
 * Rate-limit counters in this process (no REDIS_URL): a fixed window per key, as the Redis storage counts them,
 * so one instance and several behave alike. A hit costs one map lookup, where the throttler's default storage
 * filters the key's whole list of hit times on every request. Ended windows are swept once a minute, and at most
 * {@link MAX_WINDOWS} are kept (the least recently hit go first): a flood of new addresses cannot fill the heap.
 */
export class MemoryThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly windows = new LRUCache<string, Window>({ max: MAX_WINDOWS });
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 60_000) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), sweepEveryMs);
    this.sweeper.unref();
  }

  increment(key: string, ttl: number, limit: number, _blockDuration: number, name: string): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    const id = `${name}:${key}`;
    let window = this.windows.get(id);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + ttl };
      this.windows.set(id, window);
    }
    window.hits++;
    const seconds = Math.max(1, Math.ceil((window.endsAt - now) / 1000));
    const isBlocked = window.hits > limit;
    return Promise.resolve({ totalHits: window.hits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 });
  }

  private sweep(now: number): void {
    const ended = [...this.windows.entries()].filter(([, window]) => window.endsAt <= now).map(([id]) => id);
    for (const id of ended) this.windows.delete(id);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }
}
