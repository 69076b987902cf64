import { createCipheriv, createDecipheriv, createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/**
 * `bytes` bytes from the system's CSPRNG, drawn 4 KB at a time (as Node's own `randomUUID` does): one call into
 * OpenSSL per 128 secrets instead of one each. Every byte is handed out once.
 */
function pooledRandomBytes(bytes: number): Buffer {
  if (bytes > POOL_BYTES) return randomBytes(bytes);
  if (poolOffset + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return out;
}

/** A random, URL-safe secret of `bytes` bytes of entropy (codes, refresh tokens, session ids, client secrets). */
export function randomSecret(bytes = 32): string {
  return pooledRandomBytes(bytes).toString('base64url');
}

/**
 * How secrets are stored: SHA-256. They are long and random, so a fast hash is right (a slow password hash is
 * for low-entropy passwords only), and a stolen table reveals nothing usable.
 */
export function hashSecret(secret: string): string {
  // One-shot hash: half the cost of a Hash object for inputs this short.
  return hash('sha256', secret, 'hex');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/**
 * RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))), for a verifier that passed {@link PKCE_VALUE}: unreserved
 * characters only, whose UTF-8 (what is hashed) is their ASCII.
 */
export function s256(verifier: string): string {
  return hash('sha256', verifier, 'base64url');
}

export const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

/** The AES key only the holder of `secret` can derive (another input than {@link hashSecret}'s, so the stored hash is no key). */
function sealingKey(secret: string): Buffer {
  return createHash('sha256').update('seal:').update(secret).digest();
}

/** Seals `plaintext` so that only whoever presents `secret` can open it: AES-256-GCM, `<iv>.<ciphertext>.<tag>`. */
export function sealFor(secret: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, ciphertext, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.');
}

/** What {@link sealFor} sealed with `secret`, or undefined when it does not open with it. */
export function openWith(secret: string, sealed: string): string | undefined {
  const [iv, ciphertext, tag] = sealed.split('.');
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret), Buffer.from(iv, 'base64url')).setAuthTag(
      Buffer.from(tag, 'base64url'),
    );
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
