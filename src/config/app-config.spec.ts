import { describe, expect, it } from 'vitest';
import { AppConfig, ConfigError } from './app-config';

describe('AppConfig', () => {
  it('has the defaults of the contract', () => {
    const c = AppConfig.fromEnv({});
    expect(c.port).toBe(3000);
    expect(c.host).toBe('127.0.0.1');
    expect(c.database).toEqual({ kind: 'sqlite', file: './data/app.sqlite' });
    expect(c.issuer).toBe('http://localhost:3000');
    expect(c.audience).toBe('http://localhost:3000');
    expect([c.accessTokenTtl, c.refreshTokenTtl, c.authCodeTtl, c.revocationSyncSeconds, c.sessionTtl]).toEqual([
      900, 2_592_000, 60, 5, 28_800,
    ]);
    expect([c.rateLimitLogin, c.rateLimitToken]).toEqual([20, 300]);
    expect(c.redisUrl).toBeUndefined();
    expect(c.secureCookies).toBe(false);
  });

  it('reads PostgreSQL URLs and an https issuer', () => {
    const c = AppConfig.fromEnv({ DATABASE_URL: 'postgres://u:p@db:5432/app', ISSUER: 'https://auth.example.com/' });
    expect(c.database).toEqual({ kind: 'postgres', url: 'postgres://u:p@db:5432/app' });
    expect(c.issuer).toBe('https://auth.example.com');
    expect(c.secureCookies).toBe(true);
  });

  it.each([
    [{ ACCESS_TOKEN_TTL: '60s' }, /ACCESS_TOKEN_TTL must be a whole number of seconds/],
    [{ AUTH_CODE_TTL: '1.5' }, /AUTH_CODE_TTL/],
    [{ SESSION_TTL: '0' }, /SESSION_TTL must be at least 1/],
    [{ DATABASE_URL: 'mysql://x/y' }, /DATABASE_URL has an unknown scheme "mysql"/],
    [{ ISSUER: 'not a url' }, /ISSUER must be an absolute URL/],
    [{ RATE_LIMIT_LOGIN: 'many' }, /RATE_LIMIT_LOGIN/],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ NODE_ENV: 'production', ISSUER: 'https://a.example' }, /SQLite while NODE_ENV=production/],
    [{ NODE_ENV: 'production', DATABASE_URL: 'postgres://h/d' }, /ISSUER must be an https URL/],
  ])('refuses %o', (env, message) => {
    expect(() => AppConfig.fromEnv(env)).toThrow(ConfigError);
    expect(() => AppConfig.fromEnv(env)).toThrow(message);
  });

  it('allows SQLite in production only when asked to', () => {
    const c = AppConfig.fromEnv({ NODE_ENV: 'production', ISSUER: 'https://a.example', ALLOW_SQLITE_IN_PRODUCTION: '1' });
    expect(c.production).toBe(true);
  });
});
