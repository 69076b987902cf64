import { describe, expect, it } from 'vitest';
import { AuthConfig } from '../auth/auth.config';
import { RateLimitConfig } from '../rate-limit/rate-limit.config';
import { OAuthConfig } from '../oauth/oauth.config';
import { AppConfig } from './app-config';
import { ConfigError, type Env } from './env';

/** Every module's configuration, built from one environment as the application builds them. */
function configure(env: Env) {
  return { app: AppConfig.fromEnv(env), auth: new AuthConfig(env), oauth: new OAuthConfig(env), rateLimit: new RateLimitConfig(env) };
}

describe('configuration', () => {
  it('has the defaults of the contract', () => {
    const { app: c, auth, oauth, rateLimit } = configure({});
    expect(c.port).toBe(3000);
    expect(c.host).toBe('127.0.0.1');
    expect(c.database).toEqual({ kind: 'sqlite', file: './data/app.sqlite' });
    expect(c.issuer).toBe('http://localhost:3000');
    expect(c.audience).toBe('http://localhost:3000');
    expect([c.accessTokenTtl, oauth.refreshTokenTtl, oauth.authCodeTtl, auth.revocationSyncSeconds, oauth.sessionTtl]).toEqual([
      900, 2_592_000, 60, 5, 28_800,
    ]);
    expect([rateLimit.rateLimitLogin, rateLimit.rateLimitToken]).toEqual([20, 300]);
    expect(rateLimit.redisUrl).toBeUndefined();
    expect(c.secureCookies).toBe(false);
  });

  it('reads PostgreSQL URLs and an https issuer', () => {
    const c = AppConfig.fromEnv({ DATABASE_URL: 'postgres://u:p@db:5432/app', ISSUER: 'https://auth.example.com/' });
    expect(c.database).toEqual({ kind: 'postgres', url: 'postgres://u:p@db:5432/app', queryTimeoutSeconds: 10 });
    const patient = AppConfig.fromEnv({ DATABASE_URL: 'postgres://u:p@db:5432/app', DATABASE_QUERY_TIMEOUT: '30' });
    expect(patient.database).toEqual({ kind: 'postgres', url: 'postgres://u:p@db:5432/app', queryTimeoutSeconds: 30 });
    expect(c.issuer).toBe('https://auth.example.com');
    expect(c.secureCookies).toBe(true);
  });

  it.each([
    [{ ACCESS_TOKEN_TTL: '60s' }, /ACCESS_TOKEN_TTL must be a whole number of seconds/],
    [{ AUTH_CODE_TTL: '1.5' }, /AUTH_CODE_TTL/],
    [{ SESSION_TTL: '0' }, /SESSION_TTL must be at least 1/],
    [{ DATABASE_URL: 'mysql://x/y' }, /DATABASE_URL has an unknown scheme "mysql"/],
    [{ DATABASE_URL: 'postgres://db/app', DATABASE_QUERY_TIMEOUT: '0' }, /DATABASE_QUERY_TIMEOUT must be at least 1/],
    [{ ISSUER: 'not a url' }, /ISSUER must be an absolute URL/],
    [{ RATE_LIMIT_LOGIN: 'many' }, /RATE_LIMIT_LOGIN/],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ NODE_ENV: 'production', ISSUER: 'https://a.example' }, /SQLite while NODE_ENV=production/],
    [{ NODE_ENV: 'production', DATABASE_URL: 'postgres://h/d' }, /ISSUER must be an https URL/],
  ])('refuses %o', (env, message) => {
    expect(() => configure(env)).toThrow(ConfigError);
    expect(() => configure(env)).toThrow(message);
  });

  it('allows SQLite in production only when asked to', () => {
    const c = AppConfig.fromEnv({ NODE_ENV: 'production', ISSUER: 'https://a.example', ALLOW_SQLITE_IN_PRODUCTION: '1' });
    expect(c.production).toBe(true);
  });
});
