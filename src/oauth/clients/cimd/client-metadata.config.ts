import { readFileSync } from 'node:fs';
import { HostList, type HostPolicy } from '../../../safe-fetch/host-policy';
import { ConfigError, type Env, positiveInt, wholeSeconds } from '../../../config/env';

function hostList(env: Env, name: string): HostList {
  const entries = (env[name] ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  try {
    return new HostList(entries);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}

function bounded(env: Env, name: string, fallback: number, max: number): number {
  const value = positiveInt(env, name, fallback);
  if (value > max) throw new ConfigError(`${name} must be at most ${max}, got "${env[name]}"`);
  return value;
}

/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): whether an https URL may be a
 * `client_id`, which hosts such documents are fetched from, how long a fetch may take and how large a document may
 * be, and how long documents (and failures) are reused.
 */
export class ClientMetadataConfig {
  static readonly variables = [
    'CLIENT_ID_METADATA_DOCUMENTS',
    'CIMD_ALLOWED_HOSTS',
    'CIMD_DENIED_HOSTS',
    'CIMD_CA_FILE',
    'CIMD_TIMEOUT_MS',
    'CIMD_MAX_BYTES',
    'CIMD_CACHE_MIN_SECONDS',
    'CIMD_CACHE_MAX_SECONDS',
    'CIMD_FAILURE_CACHE_SECONDS',
  ] as const;
  readonly enabled: boolean;
  readonly policy: HostPolicy;
  /** Extra trusted CA certificates (PEM) for the fetches, read at start. */
  readonly ca: string | undefined;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly cacheMinSeconds: number;
  readonly cacheMaxSeconds: number;
  readonly failureCacheSeconds: number;

  constructor(env: Env) {
    const mode = env.CLIENT_ID_METADATA_DOCUMENTS || 'on';
    if (mode !== 'on' && mode !== 'off') throw new ConfigError(`CLIENT_ID_METADATA_DOCUMENTS must be on or off, got "${mode}"`);
    this.enabled = mode === 'on';
    this.policy = { allowed: hostList(env, 'CIMD_ALLOWED_HOSTS'), denied: hostList(env, 'CIMD_DENIED_HOSTS') };
    const caFile = env.CIMD_CA_FILE || undefined;
    if (caFile !== undefined) {
      let pem: string;
      try {
        pem = readFileSync(caFile, 'utf8');
      } catch {
        throw new ConfigError(`CIMD_CA_FILE cannot be read: "${caFile}"`);
      }
      if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError(`CIMD_CA_FILE holds no PEM certificate: "${caFile}"`);
      this.ca = pem;
    }
    this.timeoutMs = bounded(env, 'CIMD_TIMEOUT_MS', 5_000, 60_000);
    this.maxBytes = bounded(env, 'CIMD_MAX_BYTES', 5_120, 1_048_576);
    this.cacheMinSeconds = wholeSeconds(env, 'CIMD_CACHE_MIN_SECONDS', 60);
    this.cacheMaxSeconds = wholeSeconds(env, 'CIMD_CACHE_MAX_SECONDS', 86_400);
    if (this.cacheMaxSeconds < this.cacheMinSeconds) {
      throw new ConfigError('CIMD_CACHE_MAX_SECONDS must be at least CIMD_CACHE_MIN_SECONDS');
    }
    this.failureCacheSeconds = wholeSeconds(env, 'CIMD_FAILURE_CACHE_SECONDS', 10, 0);
  }

  /**
   * Whether the operator's host policy lets a client whose document is on `host` in (not denied; on the allow list
   * when there is one). Checked at every use of a URL client, not only at fetches: denying a host ends its clients'
   * use of the token endpoint at once, not when their refresh tokens run out.
   */
  admits(host: string): boolean {
    return !this.policy.denied.has(host) && (this.policy.allowed.empty || this.policy.allowed.has(host));
  }
}
