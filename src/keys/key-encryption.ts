import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** A private key that cannot be opened (or sealed) with the configured key-encryption key; the message says why. */
export class KeyEncryptionError extends Error {
  override name = 'KeyEncryptionError';
}

/** The marker of a sealed private key: `kek1.<kek id>.<iv>.<ciphertext>.<tag>` (base64url parts). */
const SEALED = 'kek1.';

/** A key-encryption key's id: the start of its SHA-256, stored with what it seals, so a wrong key is named. */
function kekId(kek: Buffer): string {
  return createHash('sha256').update(kek).digest('hex').slice(0, 16);
}

/**
 * Seals private signing keys at rest with AES-256-GCM under a key-encryption key (KEK). The key's `kid` is the
 * additional authenticated data, so a sealed key copied onto another row does not open. Without a KEK (outside
 * production) keys are stored as plain JWK JSON, and plain rows are always readable, so a deployment can start
 * encrypting at any time (`keys:reencrypt`).
 */
export class KeyEncryption {
  readonly id: string | undefined;

  constructor(private readonly kek: Buffer | undefined) {
    this.id = kek ? kekId(kek) : undefined;
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(SEALED);
  }

  /** The id of the KEK a stored value is sealed under (undefined for a plain one). */
  static sealedWith(stored: string): string | undefined {
    return KeyEncryption.isSealed(stored) ? stored.split('.')[1] : undefined;
  }

  seal(kid: string, plaintext: string): string {
    if (!this.kek) return plaintext;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.kek, iv).setAAD(Buffer.from(kid));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [SEALED.slice(0, -1), this.id, iv, ciphertext, cipher.getAuthTag()]
      .map((part) => (Buffer.isBuffer(part) ? part.toString('base64url') : part))
      .join('.');
  }

  /** The plaintext of a stored value; throws, naming the reason, when it cannot be opened with this KEK. */
  open(kid: string, stored: string): string {
    if (!KeyEncryption.isSealed(stored)) return stored;
    const [, id, iv, ciphertext, tag] = stored.split('.');
    if (!this.kek) throw new KeyEncryptionError(`signing key ${kid} is encrypted and KEY_ENCRYPTION_KEY is not set`);
    if (id !== this.id) throw new KeyEncryptionError(`signing key ${kid} is encrypted under another key-encryption key (${id})`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.kek, Buffer.from(iv, 'base64url'))
        .setAAD(Buffer.from(kid))
        .setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new KeyEncryptionError(`signing key ${kid} does not decrypt: altered, or sealed for another key`);
    }
  }
}
