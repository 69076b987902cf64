import { createPublicKey } from 'node:crypto';
import { rsaKeyProblem } from '../../crypto/rsa-key-limits';

/**
 * The algorithms a client may sign its assertions with: asymmetric only, never `none` or a MAC. `Ed25519` is the
 * fully-specified name of EdDSA with Ed25519 keys (RFC 9864), which clients such as oauth4webapi write.
 */
export const ASSERTION_SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA', 'Ed25519'] as const;
export type AssertionSigningAlg = (typeof ASSERTION_SIGNING_ALGS)[number];

/** A public JSON Web Key as this server keeps it (RFC 7517): the members it uses, nothing private. */
export interface PublicJwk {
  kty: 'RSA' | 'EC' | 'OKP';
  kid?: string;
  use?: string;
  alg?: string;
  n?: string;
  e?: string;
  crv?: string;
  x?: string;
  y?: string;
}

export interface JwkSet {
  keys: PublicJwk[];
}

/** At most this many keys (a current one and a few being rotated in or out) in at most this many characters of JSON. */
export const MAX_JWKS_KEYS = 10;
export const MAX_JWKS_JSON = 8192;

/** Members that only a private or secret key has (RFC 7518 6.2.2, 6.3.2, 6.4; RFC 8037 2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const KEPT_MEMBERS = ['kty', 'kid', 'use', 'alg', 'n', 'e', 'crv', 'x', 'y'] as const;

/** A client's keys that cannot be used: the message names what is wrong (never a key's value). */
export class InvalidJwksError extends Error {
  override name = 'InvalidJwksError';
}

export function isEd25519Name(alg: string): boolean {
  return alg === 'EdDSA' || alg === 'Ed25519';
}

/** Whether `jwk` is a key that `alg` verifies with: RSA for RS256, P-256 for ES256, Ed25519 for EdDSA. */
export function keyFitsAlg(jwk: PublicJwk, alg: AssertionSigningAlg): boolean {
  // A key marked for EdDSA signs as Ed25519 too (RFC 9864 names the same algorithm both ways), and the other way.
  if (jwk.alg !== undefined && jwk.alg !== alg && !(isEd25519Name(jwk.alg) && isEd25519Name(alg))) return false;
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  switch (alg) {
    case 'RS256':
      return jwk.kty === 'RSA';
    case 'ES256':
      return jwk.kty === 'EC' && jwk.crv === 'P-256';
    case 'EdDSA':
    case 'Ed25519':
      return jwk.kty === 'OKP' && jwk.crv === 'Ed25519';
  }
}

function checkedKey(value: unknown, index: number): PublicJwk {
  const where = `jwks key ${index + 1}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidJwksError(`${where} must be a JSON object`);
  const jwk = value as Record<string, unknown>;
  const secret = PRIVATE_MEMBERS.filter((name) => name in jwk);
  if (secret.length) throw new InvalidJwksError(`${where} holds private key members (${secret.join(', ')}): give public keys only`);
  for (const name of KEPT_MEMBERS) {
    if (jwk[name] !== undefined && typeof jwk[name] !== 'string') throw new InvalidJwksError(`${where}: ${name} must be a string`);
  }
  const kept = Object.fromEntries(
    KEPT_MEMBERS.filter((name) => jwk[name] !== undefined).map((name) => [name, jwk[name]]),
  ) as unknown as PublicJwk;
  if (kept.kid !== undefined && (kept.kid.length === 0 || kept.kid.length > 128))
    throw new InvalidJwksError(`${where}: kid must be 1 to 128 characters`);
  if (kept.use !== undefined && kept.use !== 'sig') throw new InvalidJwksError(`${where}: use must be sig`);
  if (kept.alg !== undefined && !(ASSERTION_SIGNING_ALGS as readonly string[]).includes(kept.alg)) {
    throw new InvalidJwksError(`${where}: alg must be one of ${ASSERTION_SIGNING_ALGS.join(', ')}`);
  }
  const fits =
    (kept.kty === 'RSA' && kept.n && kept.e) ||
    (kept.kty === 'EC' && kept.crv === 'P-256' && kept.x && kept.y) ||
    (kept.kty === 'OKP' && kept.crv === 'Ed25519' && kept.x);
  if (!fits) throw new InvalidJwksError(`${where} must be an RSA, EC P-256 or OKP Ed25519 public key`);
  if (kept.alg !== undefined && !keyFitsAlg(kept, kept.alg as AssertionSigningAlg)) {
    throw new InvalidJwksError(`${where}: alg ${kept.alg} does not fit a ${kept.kty} key`);
  }
  // Checked on the strings, before the key is built: a huge modulus or exponent would cost every verification.
  const rsaProblem = kept.kty === 'RSA' ? rsaKeyProblem(kept.n, kept.e) : undefined;
  if (rsaProblem) throw new InvalidJwksError(`${where}: ${rsaProblem}`);
  try {
    createPublicKey({ key: kept as never, format: 'jwk' });
  } catch {
    throw new InvalidJwksError(`${where} is not a valid public key`);
  }
  return kept;
}

/**
 * A client's JWK Set, checked (RFC 7591 `jwks`): 1 to {@link MAX_JWKS_KEYS} public signing keys of the supported
 * types, in at most {@link MAX_JWKS_JSON} characters, `kid`s unique. Private members anywhere are refused, never
 * dropped: whoever sent them has leaked the key. Returns the keys with the members this server uses.
 */
export function checkedJwks(value: unknown): JwkSet {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidJwksError('jwks must be a JWK Set (a JSON object with keys)');
  if (JSON.stringify(value).length > MAX_JWKS_JSON) throw new InvalidJwksError(`jwks must be at most ${MAX_JWKS_JSON} characters of JSON`);
  const keys = (value as { keys?: unknown }).keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_JWKS_KEYS) {
    throw new InvalidJwksError(`jwks must hold 1 to ${MAX_JWKS_KEYS} keys`);
  }
  const checked = keys.map(checkedKey);
  const kids = checked.map((k) => k.kid).filter((kid) => kid !== undefined);
  if (new Set(kids).size !== kids.length) throw new InvalidJwksError('jwks: each kid must be unique');
  return { keys: checked };
}

/** A client's `jwks_uri`: an absolute https URL without credentials or fragment, at most 2000 characters. */
export function checkedJwksUri(value: unknown): string {
  if (typeof value !== 'string' || value.length > 2000 || !URL.canParse(value)) throw new InvalidJwksError('jwks_uri must be an https URL');
  const url = new URL(value);
  if (url.protocol !== 'https:') throw new InvalidJwksError('jwks_uri must be an https URL');
  if (url.username || url.password || value.includes('#') || /\s/.test(value)) {
    throw new InvalidJwksError('jwks_uri must not hold credentials, a fragment or spaces');
  }
  return value;
}

/** A registered `token_endpoint_auth_signing_alg`: one of {@link ASSERTION_SIGNING_ALGS}. */
export function checkedSigningAlg(value: unknown): AssertionSigningAlg {
  if (typeof value !== 'string' || !(ASSERTION_SIGNING_ALGS as readonly string[]).includes(value)) {
    throw new InvalidJwksError(`token_endpoint_auth_signing_alg must be one of: ${ASSERTION_SIGNING_ALGS.join(', ')}`);
  }
  return value as AssertionSigningAlg;
}
