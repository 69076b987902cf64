import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisThrottlerStorage } from './redis-throttler.storage';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Against a real Redis, under a key prefix of this run's own (removed afterwards): another run's keys are left alone. */
describe('RedisThrottlerStorage', () => {
  const prefix = `rl-test-${randomUUID()}:`;
  let storage: RedisThrottlerStorage;
  let redis: Redis;

  beforeAll(() => {
    storage = new RedisThrottlerStorage(REDIS_URL, prefix);
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await storage.onApplicationShutdown();
  });

  /** Waits until Redis has expired the window's counter (its state, not a time). */
  async function windowEnded(counter: string): Promise<void> {
    while ((await redis.pttl(`${prefix}${counter}`)) !== -2) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  it('refuses a key for the block duration after it goes over its limit, past its window, without counting', async () => {
    const hit = () => storage.increment('1.2.3.4', 100, 2, 3_600_000, 'login');
    await hit();
    await hit();
    expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 1, isBlocked: true, timeToBlockExpire: 3600 });
    await windowEnded('login:1.2.3.4');
    // Still refused (seconds of the hour's block left), and the refused hit was not counted in a new window.
    const refused = await hit();
    expect(refused).toMatchObject({ totalHits: 3, timeToExpire: 1, isBlocked: true });
    expect(refused.timeToBlockExpire).toBeGreaterThan(1);
    expect(await redis.exists(`${prefix}login:1.2.3.4`)).toBe(0);
  });

  it('with a block duration of 0, counts a new window once the last one ended', async () => {
    const hit = () => storage.increment('5.6.7.8', 100, 2, 0, 'login');
    await hit();
    await hit();
    expect(await hit()).toEqual({ totalHits: 3, timeToExpire: 1, isBlocked: true, timeToBlockExpire: 1 });
    await windowEnded('login:5.6.7.8');
    expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 1, isBlocked: false, timeToBlockExpire: 0 });
    expect(await redis.exists(`${prefix}login:5.6.7.8:blocked`)).toBe(0);
  });
});
