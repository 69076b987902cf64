import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import { MemoryThrottlerStorage } from './memory-throttler.storage';

/** What `increment` answers (the throttler does not export the type from its entry point). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** How readiness reports the shared counters: `degraded` while Redis is taken for down. */
export interface CounterStoreHealth {
  status: 'up' | 'degraded';
  message?: string;
}

/** Longest a Redis call may take before the counter is taken from this instance instead (ms). */
const COMMAND_TIMEOUT_MS = 100;
/** After a failure, how long Redis is left alone before the next request tries it again (ms). */
const RETRY_AFTER_MS = 5_000;

// One round trip: count the hit in a fixed window and report the window's remaining time.
const INCREMENT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {hits, ttl}`;

/**
 * Rate-limit counters in Redis, shared by every instance (REDIS_URL). Redis must never hold a request up: every
 * call has a short timeout, and after a failure (refused, timed out, a Redis that accepts connections but does not
 * answer) the counters are kept in this instance for RETRY_AFTER_MS without trying Redis — a circuit breaker —
 * so the limits still hold, per instance, while Redis is away. Readiness reports it as degraded, not down.
 */
export class RedisThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly logger = new Logger(RedisThrottlerStorage.name);
  private readonly local = new MemoryThrottlerStorage();
  readonly redis: Redis;
  /** Until when Redis is taken for down (0 while it is up). */
  private downUntil = 0;
  private lastFailure = '';

  constructor(
    url: string,
    private readonly prefix = 'rl:',
  ) {
    this.redis = new Redis(url, {
      lazyConnect: false,
      // Queued while (re)connecting, but never for longer than the command timeout.
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
    });
    this.redis.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, name: string): Promise<ThrottlerStorageRecord> {
    if (this.isDown()) return this.local.increment(key, ttl, limit, blockDuration, name);
    try {
      const [hits, pttl] = (await this.redis.eval(INCREMENT, 1, `${this.prefix}${name}:${key}`, String(ttl))) as [number, number];
      this.markUp();
      const seconds = Math.max(1, Math.ceil(pttl / 1000));
      return { totalHits: hits, timeToExpire: seconds, isBlocked: hits > limit, timeToBlockExpire: hits > limit ? seconds : 0 };
    } catch (error) {
      this.markDown(error);
      return this.local.increment(key, ttl, limit, blockDuration, name);
    }
  }

  /** Pings Redis (with the same timeout) for the readiness report; a failure opens the breaker, a success closes it. */
  async health(): Promise<CounterStoreHealth> {
    try {
      await this.redis.ping();
      this.markUp();
      return { status: 'up' };
    } catch (error) {
      this.markDown(error);
      return { status: 'degraded', message: `${this.lastFailure}; rate limits are counted per instance meanwhile` };
    }
  }

  private isDown(): boolean {
    return this.downUntil !== 0 && Date.now() < this.downUntil;
  }

  private markUp(): void {
    if (this.downUntil !== 0) this.logger.log('redis is back: rate limits are shared again');
    this.downUntil = 0;
  }

  private markDown(error: unknown): void {
    const wasUp = this.downUntil === 0;
    this.lastFailure = (error as Error).message;
    this.downUntil = Date.now() + RETRY_AFTER_MS;
    if (wasUp) this.logger.warn(`redis failed (${this.lastFailure}): rate limits are counted per instance until it answers`);
  }

  async onApplicationShutdown(): Promise<void> {
    this.local.onApplicationShutdown();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
