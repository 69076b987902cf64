import { type KeyObject, createHash, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';

/**
 * An RSA public JWK of `bits` bits that no one holds the private key of: random odd modulus with its top bit set,
 * and `exponent` (65537 unless given): the shape of the keys an attacker sends to make verification slow.
 */
export function rsaJwk(bits: number, exponent?: Buffer): { kty: 'RSA'; n: string; e: string } {
  const n = randomBytes(bits / 8);
  n[0] |= 0x80;
  n[n.length - 1] |= 1;
  const e = exponent ?? Buffer.from([1, 0, 1]);
  e[0] |= 0x80;
  e[e.length - 1] |= 1;
  return { kty: 'RSA', n: n.toString('base64url'), e: exponent ? e.toString('base64url') : 'AQAB' };
}

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A P-256 key pair for proofs made by hand (node:crypto), with its public JWK. */
export function p256(): { privateKey: KeyObject; jwk: Record<string, unknown> } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwk: publicKey.export({ format: 'jwk' }) };
}

/**
 * A DPoP proof written byte by byte, so that it can be anything an attacker sends: `header` and `claims` are
 * merged over a valid ES256 proof's for `htm` and `htu`; `signature` replaces the real one when given.
 */
export function handProof(
  key: { privateKey: KeyObject; jwk: Record<string, unknown> },
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
  signature?: string,
): string {
  const input = `${b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk, ...header })}.${b64({ jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })}`;
  const real = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return `${input}.${signature ?? real}`;
}

/** The RFC 7638 thumbprint of a P-256 public JWK (`cnf.jkt` of a token bound to it). */
export function thumbprint(jwk: Record<string, unknown>): string {
  return createHash('sha256')
    .update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }))
    .digest('base64url');
}
