import { Injectable } from '@nestjs/common';
import { type ProtectedHeaderParameters, compactVerify, decodeJwt, decodeProtectedHeader, importJWK } from 'jose';
import { AppConfig } from '../../config/app-config';
import { ClientsRepository } from '../clients/clients.repository';
import { ASSERTION_SIGNING_ALGS, type AssertionSigningAlg, type PublicJwk, isEd25519Name, keyFitsAlg } from './client-jwks';
import { ClientKeys } from './client-keys';
import type { Client } from '../entities/client.entity';
import { OAuthError } from '../oauth-error';
import { hashSecret } from '../../crypto/secrets';

/** RFC 7523 2.2: the only `client_assertion_type` this server takes. */
export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** Seconds of clock difference tolerated on `exp`, `nbf` and `iat`. */
const CLOCK_SKEW_S = 30;
/** An assertion may be valid for at most this many seconds from now: a short life keeps the replay store small. */
export const MAX_ASSERTION_LIFETIME_S = 300;
const MAX_ASSERTION_LENGTH = 16_384;

const refused = (description: string) => new OAuthError('invalid_client', description);

/** What the unverified assertion says about who sent it: only to find the client whose keys must then verify it. */
export function assertionSubject(assertion: string): string | undefined {
  try {
    const { sub } = decodeJwt(assertion);
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `private_key_jwt` (RFC 7523 2.2 and 3, OpenID Connect Core 9): checks a client's assertion — signed by one of its
 * keys with RS256, ES256 or EdDSA (Ed25519), `iss` = `sub` = the client, `aud` this server, `exp` at most
 * {@link MAX_ASSERTION_LIFETIME_S} ahead and not past, a `jti` never seen before. The `jti` is stored until the
 * assertion expires, in the database, so a replay is refused by every instance. Each failure is `invalid_client`
 * with a plain reason (never the assertion).
 */
@Injectable()
export class ClientAssertionVerifier {
  constructor(
    private readonly keys: ClientKeys,
    private readonly rows: ClientsRepository,
    private readonly config: AppConfig,
  ) {}

  /**
   * Verifies `assertion` for `client` (registered for `private_key_jwt`), presented at `endpoint` (the path called:
   * `/token`, `/revoke` or `/introspect`), and uses up its `jti`.
   */
  async verify(client: Readonly<Client>, assertion: string, endpoint: string): Promise<void> {
    if (assertion.length > MAX_ASSERTION_LENGTH) throw refused('The client assertion is too long.');
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(assertion);
    } catch {
      throw refused('The client assertion is not a signed JWT.');
    }
    const alg = header.alg;
    if (typeof alg !== 'string' || !(ASSERTION_SIGNING_ALGS as readonly string[]).includes(alg)) {
      throw refused(`The client assertion must be signed with one of ${ASSERTION_SIGNING_ALGS.join(', ')}.`);
    }
    // EdDSA and Ed25519 name one algorithm (RFC 9864): a client pinned to either may sign as the other.
    const pinned = client.tokenEndpointAuthSigningAlg;
    if (pinned !== null && alg !== pinned && !(isEd25519Name(alg) && isEd25519Name(pinned))) {
      throw refused(`This client signs its assertions with ${client.tokenEndpointAuthSigningAlg}.`);
    }
    const payload = await this.verifiedPayload(client, assertion, alg as AssertionSigningAlg, header.kid);
    const claims = this.claims(payload);
    const now = Math.floor(Date.now() / 1000);

    if (claims.iss !== client.id || claims.sub !== client.id)
      throw refused('The client assertion must have iss and sub equal to the client id.');
    if (!this.audienceFits(claims.aud, endpoint)) throw refused('The client assertion is not for this server (aud).');
    if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp)) throw refused('The client assertion has no exp.');
    if (claims.exp + CLOCK_SKEW_S < now) throw refused('The client assertion has expired.');
    if (claims.exp > now + MAX_ASSERTION_LIFETIME_S + CLOCK_SKEW_S) {
      throw refused(`The client assertion must expire within ${MAX_ASSERTION_LIFETIME_S} seconds.`);
    }
    if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || claims.nbf > now + CLOCK_SKEW_S)) {
      throw refused('The client assertion is not valid yet (nbf).');
    }
    if (claims.iat !== undefined && (typeof claims.iat !== 'number' || claims.iat > now + CLOCK_SKEW_S)) {
      throw refused('The client assertion was issued in the future (iat).');
    }
    if (typeof claims.jti !== 'string' || claims.jti.length === 0 || claims.jti.length > 256) {
      throw refused('The client assertion must have a jti of 1 to 256 characters.');
    }
    // Kept as long as the assertion could still pass the exp check above; after that it is refused as expired anyway.
    const expiresAt = (claims.exp + CLOCK_SKEW_S) * 1000;
    if (!(await this.rows.useJti(client.id, hashSecret(claims.jti), expiresAt)))
      throw refused('The client assertion was already used (jti).');
  }

  /**
   * Deletes the `jti`s of assertions that have expired (and so cannot be replayed anyway); returns how many. The
   * retention job (RetentionService) does the same in batches, on its schedule.
   */
  async prune(now = Date.now()): Promise<number> {
    return this.rows.deleteExpiredJtis(now);
  }

  /** The payload, once a key of the client verified the signature; an unknown key refetches a `jwks_uri` once. */
  private async verifiedPayload(client: Readonly<Client>, assertion: string, alg: AssertionSigningAlg, kid: string | undefined) {
    let keys = await this.keys.keysOf(client);
    let payload = await this.verifyWithAny(assertion, alg, kid, keys);
    if (payload === undefined && client.jwksUri) {
      const refreshed = await this.keys.keysOf(client, { refresh: true });
      if (refreshed !== keys) payload = await this.verifyWithAny(assertion, alg, kid, (keys = refreshed));
    }
    if (payload === undefined) throw refused('The client assertion is not signed by a key of this client.');
    return payload;
  }

  private async verifyWithAny(assertion: string, alg: AssertionSigningAlg, kid: string | undefined, keys: PublicJwk[]) {
    const candidates = keys.filter((jwk) => keyFitsAlg(jwk, alg) && (kid === undefined || jwk.kid === kid));
    for (const jwk of candidates) {
      try {
        const key = await importJWK({ ...jwk, alg }, alg);
        return (await compactVerify(assertion, key, { algorithms: [alg] })).payload;
      } catch {
        // Not this key (or not a JWS at all): the next one, else the caller refuses.
      }
    }
    return undefined;
  }

  private claims(payload: Uint8Array): Record<string, unknown> {
    try {
      const claims = JSON.parse(Buffer.from(payload).toString('utf8')) as unknown;
      if (typeof claims === 'object' && claims !== null && !Array.isArray(claims)) return claims as Record<string, unknown>;
    } catch {
      // Refused below.
    }
    throw refused('The client assertion does not hold a JSON claims set.');
  }

  /**
   * `aud` names this server: its issuer identifier, its token endpoint (OpenID Connect Core 9), or the endpoint
   * called — all addresses of this server only, so an assertion made for another server never fits.
   */
  private audienceFits(aud: unknown, endpoint: string): boolean {
    const issuer = this.config.issuer;
    const accepted = new Set([issuer, `${issuer}/token`, `${issuer}${endpoint}`]);
    const values = Array.isArray(aud) ? aud : [aud];
    return values.some((value) => typeof value === 'string' && accepted.has(value));
  }
}
