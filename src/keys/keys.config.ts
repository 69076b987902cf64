import { accessTokenTtl } from '../config/app-config';
import { ConfigError, type Env, wholeDays } from '../config/env';

/** Seconds of clock skew allowed between the issuer and whoever checks a token's `exp`. */
export const CLOCK_SKEW_SECONDS = 30;
export const DAY_MS = 86_400_000;

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
 *
 * And the schedule of their rotation: a new key every `KEY_ROTATION_DAYS` (0: never on its own), published
 * `KEY_PROPAGATION_DAYS` before it signs, and the key it replaces published `KEY_RETIREMENT_DAYS` after it stopped
 * signing, which must cover the longest access-token lifetime (`ACCESS_TOKEN_TTL` and the allowed clock skew).
 */
export class KeysConfig {
  static readonly variables = [
    'KEY_ENCRYPTION_KEY',
    'OLD_KEY_ENCRYPTION_KEY',
    'KEY_ROTATION_DAYS',
    'KEY_PROPAGATION_DAYS',
    'KEY_RETIREMENT_DAYS',
  ] as const;
  readonly keyEncryptionKey: Buffer | undefined;
  readonly oldKeyEncryptionKey: Buffer | undefined;
  readonly rotationDays: number;
  readonly propagationDays: number;
  readonly retirementDays: number;

  constructor(env: Env) {
    this.keyEncryptionKey = keyEncryptionKey(env, 'KEY_ENCRYPTION_KEY');
    this.oldKeyEncryptionKey = keyEncryptionKey(env, 'OLD_KEY_ENCRYPTION_KEY');
    if (!this.keyEncryptionKey && (env.NODE_ENV ?? '') === 'production') {
      throw new ConfigError('KEY_ENCRYPTION_KEY is required when NODE_ENV=production (openssl rand -base64 32)');
    }
    this.rotationDays = wholeDays(env, 'KEY_ROTATION_DAYS', 90, 0);
    this.propagationDays = wholeDays(env, 'KEY_PROPAGATION_DAYS', 14, 1);
    this.retirementDays = wholeDays(env, 'KEY_RETIREMENT_DAYS', 14, 1);
    if (this.rotationDays > 0 && this.propagationDays >= this.rotationDays) {
      throw new ConfigError(
        `KEY_PROPAGATION_DAYS (${this.propagationDays}) must be less than KEY_ROTATION_DAYS (${this.rotationDays}), or set KEY_ROTATION_DAYS=0`,
      );
    }
    const tokenLifetime = accessTokenTtl(env) + CLOCK_SKEW_SECONDS;
    if (this.retirementDays * 86_400 < tokenLifetime) {
      throw new ConfigError(
        `KEY_RETIREMENT_DAYS (${this.retirementDays}) must cover the longest access-token lifetime: ACCESS_TOKEN_TTL ` +
          `plus ${CLOCK_SKEW_SECONDS} s of clock skew is ${tokenLifetime} s, at least ${Math.ceil(tokenLifetime / 86_400)} days`,
      );
    }
  }

  /** The schedule in milliseconds, as the rotation check takes it. */
  get schedule(): RotationSchedule {
    return {
      rotationMs: this.rotationDays * DAY_MS,
      propagationMs: this.propagationDays * DAY_MS,
      retirementMs: this.retirementDays * DAY_MS,
    };
  }
}

/** The rotation schedule: `rotationMs` 0 turns scheduled rotation off. */
export interface RotationSchedule {
  rotationMs: number;
  propagationMs: number;
  retirementMs: number;
}
