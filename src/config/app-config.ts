import { ConfigError, type Env, httpUrl, wholeSeconds } from './env';

export { ConfigError } from './env';

/** ACCESS_TOKEN_TTL: the lifetime of every access token, in seconds (read here and by the keys' retirement check). */
export function accessTokenTtl(env: Env): number {
  return wholeSeconds(env, 'ACCESS_TOKEN_TTL', 900);
}

/** Listening addresses a browser on the same machine reaches as `localhost`. */
const LOCAL_HOSTS = new Set(['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost']);

/** A host as it goes in a URL (an IPv6 address in brackets). */
function hostLiteral(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** PostgreSQL's `queryTimeoutSeconds`: how long a query may take while serving before the client gives up on it. */
export type DatabaseConfig = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; queryTimeoutSeconds: number };

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
    return { kind: 'postgres', url: raw, queryTimeoutSeconds: wholeSeconds(env, 'DATABASE_QUERY_TIMEOUT', 10) };
  }
  const scheme = raw.includes(':') ? raw.slice(0, raw.indexOf(':')) : raw;
  throw new ConfigError(`DATABASE_URL has an unknown scheme "${scheme}" (use sqlite:<file> or postgres://...)`);
}

/**
 * The service-wide configuration: where it listens, its database, its identity as an issuer (`iss`, `aud`, access
 * token lifetime, shared by the keys, auth and oauth modules), logging and the production safety checks. Each
 * feature module reads its own variables in its own config class (see docs/configuration.md).
 */
export class AppConfig {
  static readonly variables = [
    'PORT',
    'HOST',
    'DATABASE_URL',
    'DATABASE_QUERY_TIMEOUT',
    'ISSUER',
    'AUDIENCE',
    'ACCESS_TOKEN_TTL',
    'CORS_ORIGINS',
    'TRUST_PROXY',
    'LOG_LEVEL',
    'LOG_FORMAT',
    'NODE_ENV',
    'ALLOW_SQLITE_IN_PRODUCTION',
    'REQUEST_TIMEOUT',
    'HEADERS_TIMEOUT',
  ] as const;

  readonly port: number;
  readonly host: string;
  /** Where it listens, as a URL (`http://127.0.0.1:3000`). */
  readonly listenUrl: string;
  readonly database: DatabaseConfig;
  readonly issuer: string;
  readonly audience: string;
  readonly accessTokenTtl: number;
  readonly corsOrigins: string[];
  readonly nodeEnv: string;
  readonly production: boolean;
  readonly logLevel: string;
  /** `json` (one object a line) or `pretty` (pino-pretty, for people at a terminal). */
  readonly logFormat: 'json' | 'pretty';
  readonly trustProxy: boolean;
  /** Seconds a client has to send a whole request (headers and body); then 408 and the connection is closed. */
  readonly requestTimeout: number;
  /** Seconds a client has to send the request headers (at most {@link requestTimeout}). */
  readonly headersTimeout: number;

  /** The well-known path of the resource API's RFC 9728 metadata. */
  static readonly RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

  /**
   * The path of `AUDIENCE` when it is an http(s) URL with one ('/api' for `https://api.example.com/api`): RFC 9728
   * 3.1 puts the well-known segment between its host and this path. '' when it has none (or is not a URL).
   */
  get audiencePath(): string {
    const url = URL.canParse(this.audience) ? new URL(this.audience) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) return '';
    return url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  }

  /** The origin the API's routes are reached at (DPoP's `htu`): `AUDIENCE`'s when it is an http(s) URL, else the issuer's. */
  get resourceOrigin(): string {
    const url = URL.canParse(this.audience) ? new URL(this.audience) : undefined;
    return url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.origin : new URL(this.issuer).origin;
  }

  /**
   * The URL of the metadata, derived from `AUDIENCE` as RFC 9728 3.1 has clients derive it (so that the
   * `resource` inside matches), served by this service; under the issuer when `AUDIENCE` is not an http(s) URL.
   */
  get resourceMetadataUrl(): string {
    const url = URL.canParse(this.audience) ? new URL(this.audience) : undefined;
    const base = url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.origin : this.issuer;
    return `${base}${AppConfig.RESOURCE_METADATA_PATH}${this.audiencePath}`;
  }

  constructor(env: Env) {
    this.nodeEnv = env.NODE_ENV || 'development';
    this.production = this.nodeEnv === 'production';
    const port = env.PORT ?? '3000';
    if (!/^\d+$/.test(port) || Number(port) > 65535) {
      throw new ConfigError(`PORT must be a port number, got "${port}"`);
    }
    this.port = Number(port);
    this.host = env.HOST || '127.0.0.1';
    this.listenUrl = `http://${hostLiteral(this.host)}:${this.port}`;
    this.database = database(env);
    // Unless set, the address it listens on as a browser on the same machine reaches it (PORT=3002 gives :3002).
    this.issuer = httpUrl(env, 'ISSUER', `http://${LOCAL_HOSTS.has(this.host) ? 'localhost' : hostLiteral(this.host)}:${this.port}`);
    this.audience = env.AUDIENCE || this.issuer;
    this.accessTokenTtl = accessTokenTtl(env);
    this.corsOrigins = (env.CORS_ORIGINS || '')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean);
    this.logLevel = env.LOG_LEVEL || (this.nodeEnv === 'test' ? 'silent' : 'info');
    const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
    if (!levels.includes(this.logLevel)) {
      throw new ConfigError(`LOG_LEVEL must be one of ${levels.join(', ')}, got "${this.logLevel}"`);
    }
    // Human-readable by default only where a person reads it: in development, on a terminal.
    const format = env.LOG_FORMAT || (this.nodeEnv === 'development' && process.stdout.isTTY ? 'pretty' : 'json');
    if (format !== 'json' && format !== 'pretty') throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${format}"`);
    this.logFormat = format;
    this.trustProxy = env.TRUST_PROXY === 'true' || env.TRUST_PROXY === '1';
    this.requestTimeout = wholeSeconds(env, 'REQUEST_TIMEOUT', 30);
    this.headersTimeout = wholeSeconds(env, 'HEADERS_TIMEOUT', Math.min(10, this.requestTimeout));
    if (this.headersTimeout > this.requestTimeout) {
      throw new ConfigError(`HEADERS_TIMEOUT (${this.headersTimeout}) must not exceed REQUEST_TIMEOUT (${this.requestTimeout})`);
    }

    if (this.production) {
      if (this.database.kind === 'sqlite' && !env.ALLOW_SQLITE_IN_PRODUCTION) {
        throw new ConfigError('DATABASE_URL is SQLite while NODE_ENV=production; use PostgreSQL or set ALLOW_SQLITE_IN_PRODUCTION=1');
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
