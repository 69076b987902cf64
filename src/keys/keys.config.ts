import { ConfigError, type Env } from '../config/env';

/** The key-encryption key: 32 bytes, given as base64 (`openssl rand -base64 32`) or as 64 hex digits. */
function keyEncryptionKey(env: Env, name: string): Buffer | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const hex = /^[0-9a-f]{64}$/i.test(raw);
  const bytes = Buffer.from(raw, hex ? 'hex' : 'base64');
  if (bytes.length !== 32 || (!hex && !/^[A-Za-z0-9+/_-]{43}=?$/.test(raw))) {
    throw new ConfigError(`${name} must be 32 bytes, as base64 (openssl rand -base64 32) or 64 hex digits`);
  }
  return bytes;
}

/**
 * How private signing keys are kept at rest: encrypted (AES-256-GCM) under `KEY_ENCRYPTION_KEY`, required in
 * production. While that key is being replaced, `OLD_KEY_ENCRYPTION_KEY` (the one being replaced) still opens the
 * keys it sealed, until `keys:reencrypt` has sealed them all under the new one.
 */
export class KeysConfig {
  static readonly variables = ['KEY_ENCRYPTION_KEY', 'OLD_KEY_ENCRYPTION_KEY'] as const;
  readonly keyEncryptionKey: Buffer | undefined;
  readonly oldKeyEncryptionKey: Buffer | undefined;

  constructor(env: Env) {
    this.keyEncryptionKey = keyEncryptionKey(env, 'KEY_ENCRYPTION_KEY');
    this.oldKeyEncryptionKey = keyEncryptionKey(env, 'OLD_KEY_ENCRYPTION_KEY');
    if (!this.keyEncryptionKey && (env.NODE_ENV ?? '') === 'production') {
      throw new ConfigError('KEY_ENCRYPTION_KEY is required when NODE_ENV=production (openssl rand -base64 32)');
    }
  }
}
