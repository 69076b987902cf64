import { type JsonWebKey, type KeyObject, createPublicKey, hash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { type CryptoKey, type JWK, calculateJwkThumbprint, importJWK, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { CLOCK_SKEW_SECONDS } from '../keys/keys.config';
import { DPOP_PROOF_LIFETIME_S, DpopProofError, type ProofShape, proofShape } from './dpop-proof-shape';
import { DpopConfig } from './dpop.config';
import { DpopNonces } from './dpop-nonces';
import { DpopProofsRepository } from './dpop-proofs.repository';

export { DPOP_ALGS, DPOP_PROOF_LIFETIME_S, DpopProofError } from './dpop-proof-shape';

/**
 * The algorithms `@nestjs/jwt` (jsonwebtoken) verifies, synchronously with node:crypto: half the time of jose's
 * WebCrypto path for every proof of the resource server's requests. EdDSA (which it does not know) goes to jose.
 */
const NODE_ALGS = new Set(['ES256', 'RS256', 'PS256']);

/** Verified keys kept, at most this many bytes in all (a 4096-bit RSA entry is about 1.5 kB). */
const KEY_CACHE_BYTES = 8 * 1024 * 1024;

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
  /** Keys whose proof verified, by algorithm and members: a client signs every proof with the same key. */
  private readonly keys = new LRUCache<string, { key: KeyObject | CryptoKey | Uint8Array; jkt: string }>({
    max: 10_000,
    maxSize: KEY_CACHE_BYTES,
    sizeCalculation: (_entry, id) => 2 * id.length + 256,
  });

  constructor(
    private readonly used: DpopProofsRepository,
    private readonly nonces: DpopNonces,
    private readonly jwt: JwtService,
    readonly config: DpopConfig,
  ) {}

  /**
   * The `DPoP` header's proof checked against `target`: the key's thumbprint, or a {@link DpopProofError}. The
   * checks that cost nothing come first ({@link proofShape}, then this request's method, URL, token and nonce);
   * the key is imported and the signature checked only for a proof that passed them all.
   */
  async check(header: string | string[] | undefined, target: ProofTarget): Promise<string> {
    if (header === undefined) throw new DpopProofError('A DPoP proof is required (the DPoP header).');
    // Two headers (which Node joins with a comma) or a list: a compact JWS has no comma.
    if (typeof header !== 'string' || header.includes(',')) throw new DpopProofError('Exactly one DPoP proof is allowed.');
    const shape = proofShape(header);
    const { jti, htm, htu, ath, nonce, iat } = shape.claims;
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
    const jkt = await this.verifiedKey(header, shape);
    // A NumericDate may have a fraction (RFC 7519 2): the kept expiry is a whole millisecond.
    const expiresAt = Math.ceil((iat! + DPOP_PROOF_LIFETIME_S + 2 * CLOCK_SKEW_SECONDS) * 1000);
    if (!(await this.used.use(hash('sha256', `${jkt}:${jti as string}`, 'base64url'), expiresAt))) {
      throw new DpopProofError('The DPoP proof was already used (jti).');
    }
    return jkt;
  }

  /** The nonce a client is to put in its next proof (the `DPoP-Nonce` header); undefined when nonces are off. */
  currentNonce(): string | undefined {
    return this.nonces.current();
  }

  /** The thumbprint of the proof's key once the proof's signature verifies with it; only then is the key kept. */
  private async verifiedKey(proof: string, { alg, jwk }: ProofShape): Promise<string> {
    const id = `${alg}.${JSON.stringify([jwk.kty, jwk.crv, jwk.x, jwk.y, jwk.n, jwk.e])}`;
    const cached = this.keys.get(id);
    const entry = cached ?? (await this.imported(jwk, alg));
    try {
      // jsonwebtoken, which JwtService.verify calls, takes a KeyObject (its options' type says string or Buffer).
      // The times were checked with the proof's shape, with this server's skew.
      if (NODE_ALGS.has(alg)) {
        const options = {
          publicKey: entry.key as unknown as Buffer,
          algorithms: [alg as 'ES256'],
          ignoreExpiration: true,
          ignoreNotBefore: true,
        };
        this.jwt.verify(proof, options);
      } else {
        await jwtVerify(proof, entry.key as CryptoKey, { algorithms: [alg], clockTolerance: Number.MAX_SAFE_INTEGER });
      }
    } catch {
      // Whatever the library says of a forged proof (a bad signature, a malformed one), it is the sender's fault.
      throw new DpopProofError("The DPoP proof's signature does not verify with its jwk.");
    }
    if (!cached) this.keys.set(id, entry);
    return entry.jkt;
  }

  private async imported(jwk: JWK, alg: string): Promise<{ key: KeyObject | CryptoKey | Uint8Array; jkt: string }> {
    try {
      const key = NODE_ALGS.has(alg) ? createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }) : await importJWK(jwk, alg);
      return { key, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
    } catch {
      throw new DpopProofError("The DPoP proof's jwk is not a valid key.");
    }
  }
}
