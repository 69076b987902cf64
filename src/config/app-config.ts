/** Raised when the environment cannot be turned into a valid configuration; its message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string }
  | { kind: 'postgres'; url: string };

type Env = Record<string, string | undefined>;

/** Every environment variable the service reads (documented in README and .env.example). */
export const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'ISSUER',
  'AUDIENCE',
  'ACCESS_TOKEN_TTL',
  'REFRESH_TOKEN_TTL',
  'AUTH_CODE_TTL',
  'REVOCATION_SYNC_SECONDS',
  'SESSION_TTL',
  'RATE_LIMIT_LOGIN',
  'RATE_LIMIT_TOKEN',
  'REDIS_URL',
  'CORS_ORIGINS',
  'TRUST_PROXY',
  'LOG_LEVEL',
  'NODE_ENV',
  'ALLOW_SQLITE_IN_PRODUCTION',
] as const;

function wholeSeconds(env: Env, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(`${name} must be a whole number of seconds, got "${raw}"`);
  }
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(`${name} must be at least ${min}, got "${raw}"`);
  }
  return value;
}

function positiveInt(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) {
    throw new ConfigError(`${name} must be a positive whole number, got "${raw}"`);
  }
  return Number(raw.trim());
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http or https URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

function database(env: Env): DatabaseConfig {
  const raw = env.DATABASE_URL || 'sqlite:./data/app.sqlite';
  if (raw.startsWith('sqlite:')) {
    const file = raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!file) throw new ConfigError('DATABASE_URL sqlite:<file> needs a file name');
    return { kind: 'sqlite', file };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL is not a valid postgres:// URL');
    }
    return { kind: 'postgres', url: raw };
  }
  const scheme = raw.includes(':') ? raw.slice(0, raw.indexOf(':')) : raw;
  throw new ConfigError(`DATABASE_URL has an unknown scheme "${scheme}" (use sqlite:<file> or postgres://...)`);
}

/** The validated configuration of the service; built once from the environment (see README, "Configuration"). */
export class AppConfig {
  readonly port: number;
  readonly host: string;
  readonly database: DatabaseConfig;
  readonly issuer: string;
  readonly audience: string;
  readonly accessTokenTtl: number;
  readonly refreshTokenTtl: number;
  readonly authCodeTtl: number;
  readonly revocationSyncSeconds: number;
  readonly sessionTtl: number;
  readonly rateLimitLogin: number;
  readonly rateLimitToken: number;
  readonly redisUrl: string | undefined;
  readonly corsOrigins: string[];
  readonly nodeEnv: string;
  readonly production: boolean;
  readonly logLevel: string;
  readonly trustProxy: boolean;

  private constructor(env: Env) {
    this.nodeEnv = env.NODE_ENV || 'development';
    this.production = this.nodeEnv === 'production';
    const port = env.PORT ?? '3000';
    if (!/^\d+$/.test(port) || Number(port) > 65535) {
      throw new ConfigError(`PORT must be a port number, got "${port}"`);
    }
    this.port = Number(port);
    this.host = env.HOST || '127.0.0.1';
    this.database = database(env);
    this.issuer = url(env, 'ISSUER', 'http://localhost:3000');
    this.audience = env.AUDIENCE || this.issuer;
    this.accessTokenTtl = wholeSeconds(env, 'ACCESS_TOKEN_TTL', 900);
    this.refreshTokenTtl = wholeSeconds(env, 'REFRESH_TOKEN_TTL', 2_592_000);
    this.authCodeTtl = wholeSeconds(env, 'AUTH_CODE_TTL', 60);
    this.revocationSyncSeconds = wholeSeconds(env, 'REVOCATION_SYNC_SECONDS', 5);
    this.sessionTtl = wholeSeconds(env, 'SESSION_TTL', 28_800);
    this.rateLimitLogin = positiveInt(env, 'RATE_LIMIT_LOGIN', 20);
    this.rateLimitToken = positiveInt(env, 'RATE_LIMIT_TOKEN', 300);
    this.redisUrl = env.REDIS_URL || undefined;
    if (this.redisUrl && !/^rediss?:\/\//.test(this.redisUrl)) {
      throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
    }
    this.corsOrigins = (env.CORS_ORIGINS || '').split(',').map((o) => o.trim()).filter(Boolean);
    this.logLevel = env.LOG_LEVEL || (this.nodeEnv === 'test' ? 'silent' : 'info');
    const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
    if (!levels.includes(this.logLevel)) {
      throw new ConfigError(`LOG_LEVEL must be one of ${levels.join(', ')}, got "${this.logLevel}"`);
    }
    this.trustProxy = env.TRUST_PROXY === 'true' || env.TRUST_PROXY === '1';

    if (this.production) {
      if (this.database.kind === 'sqlite' && !env.ALLOW_SQLITE_IN_PRODUCTION) {
        throw new ConfigError(
          'DATABASE_URL is SQLite while NODE_ENV=production; use PostgreSQL or set ALLOW_SQLITE_IN_PRODUCTION=1',
        );
      }
      if (!this.issuer.startsWith('https://')) {
        throw new ConfigError('ISSUER must be an https URL when NODE_ENV=production');
      }
    }
  }

  get secureCookies(): boolean {
    return this.issuer.startsWith('https://');
  }

  static fromEnv(env: Env = process.env, overrides: Env = {}): AppConfig {
    return new AppConfig({ ...env, ...overrides });
  }
}
