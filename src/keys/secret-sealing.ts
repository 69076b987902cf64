import { KeyEncryption, KeyEncryptionError } from './key-encryption';
import type { KeysConfig } from './keys.config';

/**
 * Secrets at rest that the service must read back (second factors' seeds, connections' client secrets): sealed
 * under KEY_ENCRYPTION_KEY as the signing keys are (stored as is without one); during a KEK change, secrets sealed
 * under OLD_KEY_ENCRYPTION_KEY still open.
 */
export class SecretSealing {
  private readonly sealing: KeyEncryption;
  private readonly oldSealing: KeyEncryption | undefined;

  constructor(keys: KeysConfig) {
    this.sealing = new KeyEncryption(keys.keyEncryptionKey);
    this.oldSealing = keys.oldKeyEncryptionKey ? new KeyEncryption(keys.oldKeyEncryptionKey) : undefined;
  }

  /** `plaintext` sealed with `aad` as associated data (a sealed value copied onto another row does not open). */
  seal(aad: string, plaintext: string): string {
    return this.sealing.seal(aad, plaintext);
  }

  open(aad: string, stored: string): string {
    const sealedWith = KeyEncryption.sealedWith(stored);
    const opener = sealedWith !== undefined && this.oldSealing?.id === sealedWith ? this.oldSealing : this.sealing;
    return opener.open(aad, stored);
  }

  /** For `keys:reencrypt`: whether `stored` is to be sealed anew (plain, or under the old key); throws without a KEK. */
  needsResealing(stored: string): boolean {
    if (!this.sealing.id) throw new KeyEncryptionError('KEY_ENCRYPTION_KEY is not set: there is nothing to seal the secrets with');
    return KeyEncryption.sealedWith(stored) !== this.sealing.id;
  }
}
