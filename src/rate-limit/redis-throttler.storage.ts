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

// One round trip: a key still blocked answers how long it stays so; otherwise count the hit in a fixed window and,
// past the limit with a block asked for, block the key for that long (at least until the window ends). Answers
// the hits, the window's remaining time and the block's (0: none).
const INCREMENT = `
local block = tonumber(ARGV[3])
if block > 0 then
  local blocked = redis.call('PTTL', KEYS[2])
  if blocked > 0 then return {tonumber(redis.call('GET', KEYS[2])), math.max(redis.call('PTTL', KEYS[1]), 1), blocked} end
end
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
if block > 0 and hits > tonumber(ARGV[2]) then
  block = math.max(block, ttl)
  redis.call('SET', KEYS[2], hits, 'PX', block)
  return {hits, ttl, block}
end
return {hits, ttl, 0}`;

/**
 * Rate-limit counters in Redis, shared by every instance (REDIS_URL). Redis must never hold a request up: every
 * call has a short timeout, and after a failure (refused, timed out, a Redis that accepts connections but does not
 * answer) the counters are kept in this instance for RETRY_AFTER_MS without trying Redis — a circuit breaker —
 * so the limits still hold, per instance, while Redis is away. Readiness reports it as degraded, not down.
 * A budget's `blockDuration` is honoured as the memory storage honours it (a second key, `<counter>:blocked`).
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
      const counter = `${this.prefix}${name}:${key}`;
      const args = [String(ttl), String(limit), String(blockDuration)];
      const [hits, pttl, blocked] = (await this.redis.eval(INCREMENT, 2, counter, `${counter}:blocked`, ...args)) as [
        number,
        number,
        number,
      ];
      this.markUp();
      const timeToExpire = Math.max(1, Math.ceil(pttl / 1000));
      const isBlocked = blocked > 0 || hits > limit;
      const timeToBlockExpire = blocked > 0 ? Math.max(1, Math.ceil(blocked / 1000)) : isBlocked ? timeToExpire : 0;
      return { totalHits: hits, timeToExpire, isBlocked, timeToBlockExpire };
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
