import { type JsonWebKey, type KeyObject, createPublicKey, hash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import {
  type CryptoKey,
  type JWK,
  type JWTPayload,
  calculateJwkThumbprint,
  decodeProtectedHeader,
  errors as joseErrors,
  importJWK,
  jwtVerify,
} from 'jose';
import { LRUCache } from 'lru-cache';
import { CLOCK_SKEW_SECONDS } from '../keys/keys.config';
import { DpopConfig } from './dpop.config';
import { DpopNonces } from './dpop-nonces';
import { DpopProofsRepository } from './dpop-proofs.repository';

/**
 * The proof algorithms accepted (RFC 9449 5.1 `dpop_signing_alg_values_supported`); `Ed25519` is EdDSA by its
 * fully-specified name (RFC 9864), which current client libraries sign with.
 */
export const DPOP_ALGS = ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'] as const;

/**
 * The algorithms `@nestjs/jwt` (jsonwebtoken) verifies, synchronously with node:crypto: half the time of jose's
 * WebCrypto path for every proof of the resource server's requests. EdDSA (which it does not know) goes to jose.
 */
const NODE_ALGS = new Set(['ES256', 'RS256', 'PS256']);

/** A proof is accepted this many seconds after its `iat` (plus the clock skew), and its `jti` kept as long. */
export const DPOP_PROOF_LIFETIME_S = 60;

/** The members of a JWK that only a private (or symmetric) key has: a proof's `jwk` must have none. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** What a proof's key must be for its algorithm; RSA keys of 2048 bits or more. */
const KEY_OF_ALG: Record<(typeof DPOP_ALGS)[number], (jwk: Record<string, unknown>) => boolean> = {
  ES256: (jwk) => jwk.kty === 'EC' && jwk.crv === 'P-256',
  EdDSA: (jwk) => jwk.kty === 'OKP' && jwk.crv === 'Ed25519',
  Ed25519: (jwk) => jwk.kty === 'OKP' && jwk.crv === 'Ed25519',
  RS256: (jwk) => jwk.kty === 'RSA' && typeof jwk.n === 'string' && jwk.n.length >= 342,
  PS256: (jwk) => jwk.kty === 'RSA' && typeof jwk.n === 'string' && jwk.n.length >= 342,
};

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

/** What a request's proof must match: the method and URL of the request, and the access token it carries, if any. */
export interface ProofTarget {
  htm: string;
  htu: string;
  accessToken?: string;
  /** The token endpoint with DPOP_NONCE_SECRET set: the proof must carry a current nonce of this server. */
  nonce?: boolean;
}

/** `ath` (RFC 9449 4.2): the base64url SHA-256 of the access token. */
export function accessTokenHash(token: string): string {
  return hash('sha256', token, 'base64url');
}

/** A URL as `htu` compares it (RFC 9449 4.3): without query and fragment, scheme and host normalised. */
function htuOf(url: string): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/**
 * Checks DPoP proofs (RFC 9449 4.3) for the token endpoint and the resource server: `typ` dpop+jwt, an accepted
 * `alg` with a public `jwk` of its kind, the signature, `htm` and `htu` of this request, `iat` within
 * {@link DPOP_PROOF_LIFETIME_S}, `ath` of the presented token, the server's nonce where required, and a `jti` never
 * seen before by any instance (the database). Returns the key's thumbprint (`jkt`, RFC 7638).
 *
 * Imported keys and their thumbprints are kept (bounded): a client signs every proof with the same key.
 */
@Injectable()
export class DpopProofs {
  private readonly keys = new LRUCache<string, { key: KeyObject | CryptoKey | Uint8Array; jkt: string }>({ max: 10_000 });

  constructor(
    private readonly used: DpopProofsRepository,
    private readonly nonces: DpopNonces,
    private readonly jwt: JwtService,
    readonly config: DpopConfig,
  ) {}

  /** The `DPoP` header's proof checked against `target`: the key's thumbprint, or a {@link DpopProofError}. */
  async check(header: string | string[] | undefined, target: ProofTarget): Promise<string> {
    if (header === undefined) throw new DpopProofError('A DPoP proof is required (the DPoP header).');
    // Two headers (which Node joins with a comma) or a list: a compact JWS has no comma.
    if (typeof header !== 'string' || header.includes(',')) throw new DpopProofError('Exactly one DPoP proof is allowed.');
    const { key, jkt, alg } = await this.keyOf(header);
    const payload = await this.verified(header, key, alg);
    const { jti, htm, htu, ath, nonce, iat } = payload;
    const now = Date.now() / 1000;
    if (typeof iat !== 'number' || iat > now + CLOCK_SKEW_SECONDS || iat < now - DPOP_PROOF_LIFETIME_S - CLOCK_SKEW_SECONDS) {
      throw new DpopProofError(`The DPoP proof's iat must be within the last ${DPOP_PROOF_LIFETIME_S} seconds.`);
    }
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256)
      throw new DpopProofError('The DPoP proof needs a jti of 1 to 256 characters.');
    if (htm !== target.htm) throw new DpopProofError(`The DPoP proof is for another method (htm must be ${target.htm}).`);
    // A proof for exactly this URL needs no parsing (the usual case); else both are compared without query and fragment.
    if (typeof htu !== 'string' || (htu !== target.htu && htuOf(htu) !== htuOf(target.htu)))
      throw new DpopProofError(`The DPoP proof is for another URL (htu must be ${target.htu}).`);
    if (target.accessToken !== undefined) {
      if (ath !== accessTokenHash(target.accessToken)) throw new DpopProofError('The DPoP proof is not for this access token (ath).');
    }
    if (target.nonce && !this.nonces.isCurrent(nonce)) {
      throw new DpopProofError(nonce === undefined ? 'The DPoP proof needs a nonce of this server.' : 'The DPoP nonce is stale.', true);
    }
    const expiresAt = (iat + DPOP_PROOF_LIFETIME_S + 2 * CLOCK_SKEW_SECONDS) * 1000;
    if (!(await this.used.use(hash('sha256', `${jkt}:${jti}`, 'base64url'), expiresAt))) {
      throw new DpopProofError('The DPoP proof was already used (jti).');
    }
    return jkt;
  }

  /** The nonce a client is to put in its next proof (the `DPoP-Nonce` header); undefined when nonces are off. */
  currentNonce(): string | undefined {
    return this.nonces.current();
  }

  /** The proof's claims once its signature is verified by `key` with `alg`. */
  private async verified(
    proof: string,
    key: KeyObject | CryptoKey | Uint8Array,
    alg: string,
  ): Promise<JWTPayload & Record<string, unknown>> {
    try {
      // jsonwebtoken, which JwtService.verify calls, takes a KeyObject (its options' type says string or Buffer).
      if (NODE_ALGS.has(alg)) return this.jwt.verify(proof, { publicKey: key as unknown as Buffer, algorithms: [alg as 'ES256'] });
      return (await jwtVerify(proof, key as CryptoKey, { algorithms: [alg] })).payload;
    } catch (error) {
      if (error instanceof joseErrors.JOSEError || (error instanceof Error && error.name === 'JsonWebTokenError')) {
        throw new DpopProofError(`The DPoP proof is invalid (${error.message}).`);
      }
      throw error;
    }
  }

  /** The proof's public key (imported once per key) and its thumbprint, after the header's checks. */
  private async keyOf(proof: string): Promise<{ key: KeyObject | CryptoKey | Uint8Array; jkt: string; alg: string }> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      throw new DpopProofError('The DPoP proof is not a JWS.');
    }
    if (header.typ !== 'dpop+jwt') throw new DpopProofError('The DPoP proof must have typ dpop+jwt.');
    const alg = header.alg as (typeof DPOP_ALGS)[number];
    if (!(DPOP_ALGS as readonly string[]).includes(alg))
      throw new DpopProofError(`The DPoP proof's alg must be one of ${DPOP_ALGS.join(', ')}.`);
    const jwk = header.jwk as Record<string, unknown> | undefined;
    if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk))
      throw new DpopProofError('The DPoP proof must carry its public key (jwk).');
    if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw new DpopProofError("The DPoP proof's jwk must be a public key.");
    if (!KEY_OF_ALG[alg](jwk)) throw new DpopProofError(`The DPoP proof's jwk is not a key for ${alg}.`);
    const id = `${alg}.${JSON.stringify([jwk.kty, jwk.crv, jwk.x, jwk.y, jwk.n, jwk.e])}`;
    const cached = this.keys.get(id);
    if (cached) return { ...cached, alg };
    try {
      const members = Object.entries({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, n: jwk.n, e: jwk.e });
      const publicJwk = Object.fromEntries(members.filter(([, value]) => value !== undefined)) as JWK;
      const key = NODE_ALGS.has(alg) ? createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' }) : await importJWK(publicJwk, alg);
      const entry = { key, jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
      this.keys.set(id, entry);
      return { ...entry, alg };
    } catch {
      throw new DpopProofError("The DPoP proof's jwk is not a valid key.");
    }
  }
}
