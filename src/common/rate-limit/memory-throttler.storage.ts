import type { OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';

/** What `increment` answers (the throttler does not export the type from its entry point). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

interface Window {
  hits: number;
  endsAt: number;
}

/**
 * Rate-limit counters in this process (no REDIS_URL): a fixed window per key, as the Redis storage counts them,
 * so one instance and several behave alike. A hit costs one map lookup, where the throttler's default storage
 * filters the key's whole list of hit times on every request. Ended windows are swept once a minute.
 */
export class MemoryThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly windows = new Map<string, Window>();
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
    for (const [id, window] of this.windows) if (window.endsAt <= now) this.windows.delete(id);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }
}
