import { ConfigError, type Env } from '../config/env';
import { hashSecret, safeEqual } from '../crypto/secrets';
import { AddressAllowList } from './address-allow-list';

/** RFC 6750 b64token: what can follow `Bearer ` in an Authorization header. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const DEFAULT_ALLOW = '127.0.0.1/8,::1';

/**
 * `/metrics` (Prometheus): `METRICS=on|off` (default on); who may read it without a token, `METRICS_ALLOW`
 * (comma-separated addresses and CIDR networks, default loopback; `none` for nobody); and `METRICS_TOKEN`, a bearer
 * token that is accepted from anywhere.
 */
export class MetricsConfig {
  static readonly variables = ['METRICS', 'METRICS_TOKEN', 'METRICS_ALLOW'] as const;
  readonly enabled: boolean;
  readonly allow: AddressAllowList;
  /** SHA-256 of `METRICS_TOKEN`: a presented token is hashed and compared in constant time, whatever its length. */
  private readonly tokenHash: string | undefined;

  constructor(env: Env) {
    const mode = env.METRICS || 'on';
    if (mode !== 'on' && mode !== 'off') throw new ConfigError(`METRICS must be on or off, got "${mode}"`);
    this.enabled = mode === 'on';
    const token = env.METRICS_TOKEN || undefined;
    if (token !== undefined && (token.length < 32 || !B64TOKEN.test(token))) {
      throw new ConfigError('METRICS_TOKEN must be at least 32 characters of A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 32)');
    }
    this.tokenHash = token === undefined ? undefined : hashSecret(token);
    const allow = (env.METRICS_ALLOW || DEFAULT_ALLOW).trim();
    const entries = allow === 'none' ? [] : allow.split(',').map((entry) => entry.trim());
    try {
      this.allow = new AddressAllowList(entries);
    } catch (error) {
      throw new ConfigError(`METRICS_ALLOW: ${(error as Error).message} (use addresses and CIDR networks, or none)`);
    }
  }

  /** Whether `presented` is `METRICS_TOKEN` (never, when none is set). */
  acceptsToken(presented: string): boolean {
    return this.tokenHash !== undefined && safeEqual(hashSecret(presented), this.tokenHash);
  }
}
