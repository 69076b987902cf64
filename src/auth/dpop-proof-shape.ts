import { type JWK, type JWTPayload, decodeJwt, decodeProtectedHeader } from 'jose';
import { rsaKeyProblem } from '../crypto/rsa-key-limits';
import { CLOCK_SKEW_SECONDS } from '../keys/keys.config';

/**
 * The proof algorithms accepted (RFC 9449 5.1 `dpop_signing_alg_values_supported`); `Ed25519` is EdDSA by its
 * fully-specified name (RFC 9864), which current client libraries sign with.
 */
export const DPOP_ALGS = ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'] as const;
export type DpopAlg = (typeof DPOP_ALGS)[number];

/** A proof is accepted this many seconds after its `iat` (plus the clock skew), and its `jti` kept as long. */
export const DPOP_PROOF_LIFETIME_S = 60;

/** A proof with a 4096-bit RSA key is about 1,500 characters: anything far longer is refused unread. */
const MAX_PROOF_LENGTH = 4096;

/** The members of a JWK that only a private (or symmetric) key has: a proof's `jwk` must have none. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** Why a proof's key does not fit its algorithm, or undefined when it does (RSA: see {@link rsaKeyProblem}). */
const KEY_OF_ALG: Record<DpopAlg, (jwk: Record<string, unknown>) => string | undefined> = {
  ES256: (jwk) => (jwk.kty === 'EC' && jwk.crv === 'P-256' ? undefined : 'not a P-256 key'),
  EdDSA: (jwk) => (jwk.kty === 'OKP' && jwk.crv === 'Ed25519' ? undefined : 'not an Ed25519 key'),
  Ed25519: (jwk) => (jwk.kty === 'OKP' && jwk.crv === 'Ed25519' ? undefined : 'not an Ed25519 key'),
  RS256: (jwk) => (jwk.kty === 'RSA' ? rsaKeyProblem(jwk.n, jwk.e) : 'not an RSA key'),
  PS256: (jwk) => (jwk.kty === 'RSA' ? rsaKeyProblem(jwk.n, jwk.e) : 'not an RSA key'),
};

/** The signature's length in base64url characters where the algorithm fixes it (64 bytes). */
const SIGNATURE_CHARS: Partial<Record<DpopAlg, number>> = { ES256: 86, EdDSA: 86, Ed25519: 86 };

/** A proof refused: why, and whether a fresh nonce would help (`use_dpop_nonce`). */
export class DpopProofError extends Error {
  override name = 'DpopProofError';
  constructor(
    readonly description: string,
    readonly useNonce = false,
  ) {
    super(description);
  }
}

/** A proof read but not yet verified: its algorithm, its public key's members, its claims. */
export interface ProofShape {
  alg: DpopAlg;
  jwk: JWK;
  claims: JWTPayload & Record<string, unknown>;
}

/**
 * Everything about a proof that costs no key import and no signature check (RFC 9449 4.3): a compact JWS of
 * sane length, `typ`, `alg`, no `crit`, a public `jwk` of the algorithm's kind and size, a signature of the
 * algorithm's length, `iat` within the lifetime, `exp`/`nbf` if present, and a `jti`. A flood of forged proofs
 * is refused here, before the work a real one needs.
 */
export function proofShape(proof: string): ProofShape {
  if (proof.length > MAX_PROOF_LENGTH) throw new DpopProofError(`The DPoP proof must be at most ${MAX_PROOF_LENGTH} characters.`);
  let header: ReturnType<typeof decodeProtectedHeader>;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(proof);
    claims = decodeJwt(proof);
  } catch {
    throw new DpopProofError('The DPoP proof is not a JWS.');
  }
  if (header.typ !== 'dpop+jwt') throw new DpopProofError('The DPoP proof must have typ dpop+jwt.');
  const alg = header.alg as DpopAlg;
  if (!(DPOP_ALGS as readonly string[]).includes(alg))
    throw new DpopProofError(`The DPoP proof's alg must be one of ${DPOP_ALGS.join(', ')}.`);
  // RFC 7515 4.1.11: a header parameter the recipient must understand, and this server understands none.
  if ('crit' in header) throw new DpopProofError('The DPoP proof must not have a crit header.');
  const jwk = header.jwk as Record<string, unknown> | undefined;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk))
    throw new DpopProofError('The DPoP proof must carry its public key (jwk).');
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw new DpopProofError("The DPoP proof's jwk must be a public key.");
  const keyProblem = KEY_OF_ALG[alg](jwk);
  if (keyProblem) throw new DpopProofError(`The DPoP proof's jwk does not fit ${alg}: ${keyProblem}.`);
  const signature = proof.slice(proof.lastIndexOf('.') + 1);
  const expected = SIGNATURE_CHARS[alg];
  if (expected !== undefined && signature.length !== expected) throw new DpopProofError(`The DPoP proof's signature is not one of ${alg}.`);
  checkTimes(claims);
  const { jti } = claims;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
    throw new DpopProofError('The DPoP proof needs a jti of 1 to 256 characters.');
  const members = Object.entries({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, n: jwk.n, e: jwk.e });
  const publicJwk = Object.fromEntries(members.filter(([, value]) => value !== undefined)) as JWK;
  return { alg, jwk: publicJwk, claims: claims as ProofShape['claims'] };
}

/** `iat` within the last {@link DPOP_PROOF_LIFETIME_S} seconds; `exp` and `nbf`, which a proof need not have, honoured. */
function checkTimes({ iat, exp, nbf }: JWTPayload): void {
  const now = Date.now() / 1000;
  if (
    typeof iat !== 'number' ||
    !Number.isFinite(iat) ||
    iat > now + CLOCK_SKEW_SECONDS ||
    iat < now - DPOP_PROOF_LIFETIME_S - CLOCK_SKEW_SECONDS
  ) {
    throw new DpopProofError(`The DPoP proof's iat must be within the last ${DPOP_PROOF_LIFETIME_S} seconds.`);
  }
  if (exp !== undefined && (typeof exp !== 'number' || !(exp > now - CLOCK_SKEW_SECONDS)))
    throw new DpopProofError('The DPoP proof has expired (exp).');
  if (nbf !== undefined && (typeof nbf !== 'number' || !(nbf <= now + CLOCK_SKEW_SECONDS)))
    throw new DpopProofError('The DPoP proof is not valid yet (nbf).');
}
