import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';

/** What `increment` answers (the throttler does not export the type from its entry point). */
type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

// One round trip: count the hit in a fixed window and report the window's remaining time.
const INCREMENT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {hits, ttl}`;

/** Rate-limit counters in Redis, shared by every instance (REDIS_URL). Fails open if Redis is unreachable. */
export class RedisThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly logger = new Logger(RedisThrottlerStorage.name);
  readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix = 'rl:',
  ) {
    this.redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: true, connectTimeout: 2_000 });
    this.redis.on('error', (error: Error) => this.logger.warn(`redis: ${error.message}`));
  }

  async increment(key: string, ttl: number, limit: number, _blockDuration: number, name: string): Promise<ThrottlerStorageRecord> {
    try {
      const [hits, pttl] = (await this.redis.eval(INCREMENT, 1, `${this.prefix}${name}:${key}`, String(ttl))) as [number, number];
      const seconds = Math.max(1, Math.ceil(pttl / 1000));
      return { totalHits: hits, timeToExpire: seconds, isBlocked: hits > limit, timeToBlockExpire: hits > limit ? seconds : 0 };
    } catch (error) {
      this.logger.warn(`rate limit not applied, redis failed: ${(error as Error).message}`);
      return { totalHits: 0, timeToExpire: 0, isBlocked: false, timeToBlockExpire: 0 };
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
