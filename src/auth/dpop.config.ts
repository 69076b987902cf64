import { ConfigError, type Env } from '../config/env';

/** DPoP (RFC 9449): whether every access token must be bound to a key, and the secret of the server's nonces. */
export class DpopConfig {
  static readonly variables = ['DPOP_REQUIRED', 'DPOP_NONCE_SECRET'] as const;
  /** `DPOP_REQUIRED=1`: every token request carries a DPoP proof, so every access token is bound to a key. */
  readonly required: boolean;
  /**
   * `DPOP_NONCE_SECRET` (32 characters or more, the same on every instance): the token endpoint requires a nonce
   * it issued (RFC 9449 8) in each proof, so that a proof made in advance is useless. Unset: no nonces.
   */
  readonly nonceSecret: string | undefined;

  constructor(env: Env) {
    this.required = env.DPOP_REQUIRED === '1' || env.DPOP_REQUIRED === 'true';
    const secret = env.DPOP_NONCE_SECRET;
    if (secret !== undefined && secret !== '' && secret.length < 32) {
      throw new ConfigError('DPOP_NONCE_SECRET must be at least 32 characters (the same on every instance)');
    }
    this.nonceSecret = secret || undefined;
  }
}
