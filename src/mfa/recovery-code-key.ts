import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { randomBytes } from 'node:crypto';
import { KEYS_REENCRYPTING, type ResealedSecrets } from '../keys/key-events';
import { KeysConfig } from '../keys/keys.config';
import { SecretSealing } from '../keys/secret-sealing';
import { MfaKeysRepository } from './mfa-keys.repository';
import { keyedRecoveryCodeHash, unkeyedRecoveryCodeHash } from './recovery-codes';

const NAME = 'recovery-codes';
/** The associated data of the sealed key: sealed for this use only. */
const AAD = `mfa-key:${NAME}`;

/**
 * The recovery codes' HMAC key: 32 random bytes made by the first instance to start, stored in `mfa_keys` sealed
 * under KEY_ENCRYPTION_KEY (re-sealed by `keys:reencrypt`, so a KEK change keeps every code working). At start,
 * recovery codes stored as plain SHA-256 by an earlier release are keyed in place: they keep working.
 */
@Injectable()
export class RecoveryCodeKey implements OnApplicationBootstrap {
  private readonly sealing: SecretSealing;
  private key: Promise<Buffer> | undefined;

  constructor(
    private readonly keys: MfaKeysRepository,
    config: KeysConfig,
  ) {
    this.sealing = new SecretSealing(config);
  }

  async onApplicationBootstrap(): Promise<void> {
    const key = await this.loaded();
    await this.keys.keyRecoveryCodes((unkeyed) => keyedRecoveryCodeHash(key, unkeyed));
  }

  /** What is stored of `code` (a normalized recovery code). */
  async hashOf(code: string): Promise<string> {
    return keyedRecoveryCodeHash(await this.loaded(), unkeyedRecoveryCodeHash(code));
  }

  /** `keys:reencrypt`: the key sealed under KEY_ENCRYPTION_KEY (when plain or under the old key). */
  @OnEvent(KEYS_REENCRYPTING, { promisify: true, suppressErrors: false })
  async reseal(): Promise<ResealedSecrets> {
    const stored = await this.keys.find(NAME);
    if (stored === undefined || !this.sealing.needsResealing(stored)) return { recoveryCodeKey: 0 };
    const sealed = this.sealing.seal(AAD, this.sealing.open(AAD, stored));
    return { recoveryCodeKey: (await this.keys.reseal(NAME, stored, sealed)) ? 1 : 0 };
  }

  private loaded(): Promise<Buffer> {
    this.key ??= (async () => {
      const made = this.sealing.seal(AAD, randomBytes(32).toString('base64url'));
      const stored = await this.keys.findOrCreate(NAME, made, Date.now());
      return Buffer.from(this.sealing.open(AAD, stored), 'base64url');
    })().catch((error: unknown) => {
      this.key = undefined;
      throw error;
    });
    return this.key;
  }
}
