import { type Env, wholeSeconds } from '../config/env';

/** The authorization server's lifetimes (seconds) and its server-wide rules. */
export class OAuthConfig {
  static readonly variables = [
    'REFRESH_TOKEN_TTL',
    'AUTH_CODE_TTL',
    'SESSION_TTL',
    'ALLOW_HTTP_REDIRECT_URIS',
    'REQUIRE_PUSHED_AUTHORIZATION_REQUESTS',
  ] as const;
  /** Absolute lifetime of a refresh-token family: rotation never extends it. */
  readonly refreshTokenTtl: number;
  readonly authCodeTtl: number;
  readonly sessionTtl: number;
  /** `ALLOW_HTTP_REDIRECT_URIS=1`: plain-http redirect URIs on other hosts than loopback even in production (a lab). */
  readonly allowHttpRedirectUris: boolean;
  /** `REQUIRE_PUSHED_AUTHORIZATION_REQUESTS=1`: every client pushes its authorization requests (RFC 9126, FAPI 2.0). */
  readonly requirePushedRequests: boolean;

  constructor(env: Env) {
    this.refreshTokenTtl = wholeSeconds(env, 'REFRESH_TOKEN_TTL', 2_592_000);
    this.authCodeTtl = wholeSeconds(env, 'AUTH_CODE_TTL', 60);
    this.sessionTtl = wholeSeconds(env, 'SESSION_TTL', 28_800);
    this.allowHttpRedirectUris = env.ALLOW_HTTP_REDIRECT_URIS === '1' || env.ALLOW_HTTP_REDIRECT_URIS === 'true';
    this.requirePushedRequests = env.REQUIRE_PUSHED_AUTHORIZATION_REQUESTS === '1' || env.REQUIRE_PUSHED_AUTHORIZATION_REQUESTS === 'true';
  }
}
