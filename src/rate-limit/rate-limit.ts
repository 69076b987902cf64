import { clientAddress } from '../common/client-address';
import { type ExecutionContext, Inject, Injectable, SetMetadata, UseGuards, applyDecorators } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { ThrottlerException, ThrottlerGuard, type ThrottlerModuleOptions } from '@nestjs/throttler';
import type { Request } from 'express';
import type { RateLimitBucket, RateLimitConfig } from './rate-limit.config';
import { MemoryThrottlerStorage } from './memory-throttler.storage';
import { RedisThrottlerStorage } from './redis-throttler.storage';

const BUCKET_KEY = 'rate-limit:bucket';
const CLIENT_KEY = 'rate-limit:client';

/**
 * The client a request names (an id, whether or not such a client exists), for a budget counted per client: the
 * route's module knows where its requests name one (the authorization server: HTTP Basic, `client_id`, an
 * assertion's `sub`); the rate limiter knows no protocol.
 */
export type NamedClient = (req: Request) => string | undefined;

/** The event a refusal emits, with its bucket (the metrics module counts them): the rate limiter knows no feature. */
export const RATE_LIMIT_REFUSED = 'rate-limit.refused';
const WINDOW_MS = 60_000;
/**
 * A spent budget opens again when its window ends, not `blockDuration` after the hit that spent it (the throttler
 * blocks for the window's length unless told otherwise). A route may still ask for a block with `@Throttle()`.
 */
const NO_BLOCK = 0;

/** Buckets by handler: decorators are done at start-up, and every budget asks once per request. */
const buckets = new WeakMap<object, RateLimitBucket | undefined>();

function bucketOf(context: ExecutionContext): RateLimitBucket | undefined {
  const handler = context.getHandler();
  if (!buckets.has(handler)) buckets.set(handler, Reflect.getMetadata(BUCKET_KEY, handler) as RateLimitBucket | undefined);
  return buckets.get(handler);
}

/** Clients by handler, as {@link bucketOf}. */
const namers = new WeakMap<object, NamedClient | undefined>();

/** The client the request names, by the route's {@link NamedClient} (at most 100 characters); else its address. */
function clientTracker(req: Request, context: ExecutionContext): string {
  const handler = context.getHandler();
  if (!namers.has(handler)) namers.set(handler, Reflect.getMetadata(CLIENT_KEY, handler) as NamedClient | undefined);
  const client = namers.get(handler)?.(req);
  return client !== undefined ? `client:${client.slice(0, 100)}` : `ip:${clientAddress(req)}`;
}

/**
 * The counter's key: the route, the budget and the tracker (an address or a client id of at most 100 characters),
 * as the throttler's own key says, without hashing it (a SHA-256 per budget and request).
 */
function counterKey(context: ExecutionContext, tracker: string, name: string): string {
  return `${context.getClass().name}-${context.getHandler().name}-${name}-${tracker}`;
}

/** POST /login and client registration: per address. POST /token: per address and per client. Counters in Redis when REDIS_URL is set. */
export function rateLimitOptions(config: RateLimitConfig): ThrottlerModuleOptions {
  return {
    setHeaders: false,
    generateKey: counterKey,
    storage: config.redisUrl ? new RedisThrottlerStorage(config.redisUrl) : new MemoryThrottlerStorage(),
    throttlers: [
      {
        name: 'login',
        limit: config.rateLimitLogin,
        ttl: WINDOW_MS,
        blockDuration: NO_BLOCK,
        skipIf: (ctx) => bucketOf(ctx) !== 'login',
        getTracker: (req) => `ip:${clientAddress(req as Request)}`,
      },
      {
        name: 'register',
        limit: config.rateLimitRegister,
        ttl: WINDOW_MS,
        blockDuration: NO_BLOCK,
        skipIf: (ctx) => bucketOf(ctx) !== 'register',
        getTracker: (req) => `ip:${clientAddress(req as Request)}`,
      },
      {
        name: 'token-address',
        limit: config.rateLimitToken,
        ttl: WINDOW_MS,
        blockDuration: NO_BLOCK,
        skipIf: (ctx) => bucketOf(ctx) !== 'token',
        getTracker: (req) => `ip:${clientAddress(req as Request)}`,
      },
      {
        name: 'token-client',
        limit: config.rateLimitToken,
        ttl: WINDOW_MS,
        blockDuration: NO_BLOCK,
        skipIf: (ctx) => bucketOf(ctx) !== 'token',
        getTracker: (req, context) => clientTracker(req as Request, context),
      },
    ],
  };
}

/** Answers 429 with `Retry-After` (seconds) when a budget is spent, and reports the refusal ({@link RATE_LIMIT_REFUSED}). */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  // A property, so that the throttler's own constructor and its injections stay as they are.
  @Inject(EventEmitter2) private readonly events!: EventEmitter2;

  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: { timeToBlockExpire: number; timeToExpire: number },
  ): Promise<void> {
    const bucket = bucketOf(context);
    if (bucket) this.events.emit(RATE_LIMIT_REFUSED, bucket);
    const res = context.switchToHttp().getResponse<{ setHeader(name: string, value: string): void }>();
    res.setHeader('Retry-After', String(Math.max(1, Math.ceil(detail.timeToBlockExpire || detail.timeToExpire))));
    throw new ThrottlerException('Too many requests; try again later.');
  }
}

/**
 * Puts a route under one of the rate-limit budgets. The `token` budget counts per address and per client: `clientOf`
 * says which client a request names (without it, the per-client count falls back to the address).
 */
export function RateLimit(bucket: RateLimitBucket, clientOf?: NamedClient) {
  const client = clientOf ? [SetMetadata(CLIENT_KEY, clientOf)] : [];
  return applyDecorators(SetMetadata(BUCKET_KEY, bucket), ...client, UseGuards(RateLimitGuard));
}
