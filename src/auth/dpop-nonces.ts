import { createHmac } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { safeEqual } from '../crypto/secrets';
import { DpopConfig } from './dpop.config';

/** A nonce is current for one period and accepted for one more (a client retrying across the turn). */
const PERIOD_MS = 300_000;

/**
 * The server's DPoP nonces (RFC 9449 8): an HMAC of the current five-minute period under `DPOP_NONCE_SECRET`, so
 * every instance with the same secret issues and accepts the same nonces without storing them.
 */
@Injectable()
export class DpopNonces {
  private cached: { period: number; nonce: string } | undefined;

  constructor(private readonly config: DpopConfig) {}

  /** The nonce of this period; undefined when nonces are off. */
  current(now = Date.now()): string | undefined {
    if (!this.config.nonceSecret) return undefined;
    return this.of(Math.floor(now / PERIOD_MS));
  }

  /** Whether `nonce` is this period's or the previous one's. */
  isCurrent(nonce: unknown, now = Date.now()): boolean {
    if (typeof nonce !== 'string' || !this.config.nonceSecret) return false;
    const period = Math.floor(now / PERIOD_MS);
    return safeEqual(nonce, this.of(period)) || safeEqual(nonce, this.of(period - 1));
  }

  private of(period: number): string {
    if (this.cached?.period === period) return this.cached.nonce;
    const nonce = createHmac('sha256', this.config.nonceSecret!).update(`dpop-nonce:${period}`).digest('base64url');
    if (!this.cached || period > this.cached.period) this.cached = { period, nonce };
    return nonce;
  }
}
