import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random, URL-safe secret of `bytes` bytes of entropy (codes, refresh tokens, session ids, client secrets). */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * How secrets are stored: SHA-256. They are long and random, so a fast hash is right (a slow password hash is
 * for low-entropy passwords only), and a stolen table reveals nothing usable.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
