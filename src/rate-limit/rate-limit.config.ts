import { ConfigError, type Env, positiveInt } from '../config/env';

/** The budgets a route can be put under (`@RateLimit(bucket)`), each with its own limit below. */
export const RATE_LIMIT_BUCKETS = ['login', 'token', 'register'] as const;
export type RateLimitBucket = (typeof RATE_LIMIT_BUCKETS)[number];

/** Budgets per minute, and where the counters live (Redis, shared by every instance, when REDIS_URL is set). */
export class RateLimitConfig {
  static readonly variables = ['RATE_LIMIT_LOGIN', 'RATE_LIMIT_TOKEN', 'RATE_LIMIT_REGISTER', 'REDIS_URL'] as const;
  readonly rateLimitLogin: number;
  readonly rateLimitToken: number;
  /** Dynamic client registration (`/register` and its RFC 7592 routes), per address. */
  readonly rateLimitRegister: number;
  readonly redisUrl: string | undefined;

  constructor(env: Env) {
    this.rateLimitLogin = positiveInt(env, 'RATE_LIMIT_LOGIN', 20);
    this.rateLimitToken = positiveInt(env, 'RATE_LIMIT_TOKEN', 300);
    this.rateLimitRegister = positiveInt(env, 'RATE_LIMIT_REGISTER', 20);
    this.redisUrl = env.REDIS_URL || undefined;
    if (this.redisUrl && !/^rediss?:\/\//.test(this.redisUrl)) {
      throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
    }
  }
}
