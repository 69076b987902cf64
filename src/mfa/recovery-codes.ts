import { createHmac, hash, randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** Ten recovery codes, each `xxxx-xxxx-xxxx-xxxx` (16 base32 letters and digits, 80 bits), shown once. */
export function newRecoveryCodes(count = 10): string[] {
  return Array.from({ length: count }, () => {
    const chars = [...randomBytes(16)].map((b) => ALPHABET[b & 31]).join('');
    return chars.match(/.{4}/g)!.join('-');
  });
}

/**
 * A recovery code as typed (any case, with or without its hyphens or spaces) in the form it was issued: 16
 * characters, or 10 (`xxxxx-xxxxx`, 50 bits) for one issued before the codes grew.
 */
export function normalizedRecoveryCode(typed: string): string | undefined {
  const chars = typed.toLowerCase().replace(/[\s-]/g, '');
  if (/^[a-z2-7]{16}$/.test(chars)) return chars.match(/.{4}/g)!.join('-');
  return /^[a-z2-7]{10}$/.test(chars) ? `${chars.slice(0, 5)}-${chars.slice(5)}` : undefined;
}

/** The SHA-256 of a code (hex): all that was stored of one before the hashes were keyed. */
export function unkeyedRecoveryCodeHash(code: string): string {
  return hash('sha256', code, 'hex');
}

/**
 * How a recovery code is stored: HMAC-SHA256 under the service's recovery-code key of its SHA-256 (base64url, 43
 * characters), so a stolen table cannot be checked against guesses without the key, and a hash stored before the
 * key (64 hex digits) is keyed in place by the same function.
 */
export function keyedRecoveryCodeHash(key: Buffer, unkeyed: string): string {
  return createHmac('sha256', key).update(unkeyed).digest('base64url');
}
