import { Injectable } from '@nestjs/common';
import { type JWTPayload, errors as joseErrors, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../config/app-config';
import { CLOCK_SKEW_SECONDS, SigningKeysService } from '../keys/signing-keys.service';
import { type ActClaim, type AuthPrincipal, CLIENT_CREDENTIALS_CLAIM } from './principal';
import { RevokedGrantsService } from './revoked-grants.service';

export class InvalidAccessTokenError extends Error {
  override name = 'InvalidAccessTokenError';
}

/** Verified tokens kept (least recently used out first); each for at most its remaining lifetime. */
const CACHE_LIMIT = 10_000;
/** RFC 6750 2.1's `b64token`: what a bearer token may be made of. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Verifies RFC 9068 access tokens locally (no database round trip). Verified tokens are cached (bounded, never
 * past their `exp`), and every answer consults the in-memory list of revoked grants.
 *
 * Verification uses `jose` rather than `@nestjs/jwt` (which mints them): RFC 9068 requires checking the `typ`
 * header (`at+jwt`), which jsonwebtoken cannot, and keys are resolved per token by `kid` from the published set,
 * with a rate-limited reload for a `kid` this instance has not seen yet.
 */
@Injectable()
export class AccessTokenVerifier {
  private readonly cache = new LRUCache<string, { principal: AuthPrincipal; kid: string }>({ max: CACHE_LIMIT, ttl: 3_600_000 });

  constructor(
    private readonly keys: SigningKeysService,
    private readonly revocations: RevokedGrantsService,
    private readonly config: AppConfig,
  ) {}

  /** Returns the caller a token describes, or throws {@link InvalidAccessTokenError}. */
  async verify(token: string): Promise<AuthPrincipal> {
    const cached = this.cache.get(token);
    // A token stays cached until it expires, unless its key leaves the JWKS first (retired and past its time).
    if (cached && this.keys.isPublished(cached.kid)) {
      if (this.revocations.isTokenRevoked(cached.principal)) throw new InvalidAccessTokenError('the grant was revoked');
      return cached.principal;
    }
    if (cached) this.cache.delete(token);
    // Checked once a token is not among the verified ones, which all passed it.
    if (!B64TOKEN.test(token)) throw new InvalidAccessTokenError('malformed token');

    const { principal, kid } = await this.verifyWithKid(token);
    if (this.revocations.isTokenRevoked(principal)) throw new InvalidAccessTokenError('the grant was revoked');
    const ttl = (principal.exp + CLOCK_SKEW_SECONDS) * 1000 - Date.now();
    if (ttl > 0) this.cache.set(token, { principal, kid }, { ttl });
    return principal;
  }

  /**
   * Verifies a token without the cache or the revocation list (introspection adds its own checks). With
   * `anyAudience`, a token this server issued for another resource (RFC 8707) verifies too: the authorization
   * server's own endpoints (revocation, introspection) serve every token it issued, the API only its own.
   */
  async verifySignatureAndClaims(token: string, options: { anyAudience?: boolean } = {}): Promise<AuthPrincipal> {
    return (await this.verifyWithKid(token, options)).principal;
  }

  /** {@link verifySignatureAndClaims}, and the `kid` of the key that verified the token. */
  private async verifyWithKid(token: string, options: { anyAudience?: boolean } = {}): Promise<{ principal: AuthPrincipal; kid: string }> {
    let payload: JWTPayload;
    let kid = '';
    try {
      ({ payload } = await jwtVerify(
        token,
        async (header) => {
          const key = header.kid ? await this.keys.verificationKey(header.kid) : undefined;
          if (!key) throw new InvalidAccessTokenError('unknown key');
          kid = header.kid!;
          return key;
        },
        {
          algorithms: ['RS256'],
          typ: 'at+jwt',
          issuer: this.config.issuer,
          audience: options.anyAudience ? undefined : this.config.audience,
          clockTolerance: CLOCK_SKEW_SECONDS,
          requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti'],
        },
      ));
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) throw error;
      if (error instanceof joseErrors.JOSEError) throw new InvalidAccessTokenError(error.code);
      throw new InvalidAccessTokenError('malformed token');
    }
    const {
      sub,
      client_id: clientId,
      scope,
      gid,
      gcid,
      jti,
      exp,
      iat,
      gty,
      aud,
      act,
      acr,
      auth_time: authTime,
      cnf,
    } = payload as JWTPayload & Record<string, unknown>;
    if (
      typeof sub !== 'string' ||
      typeof clientId !== 'string' ||
      typeof scope !== 'string' ||
      typeof gid !== 'string' ||
      typeof jti !== 'string' ||
      typeof exp !== 'number' ||
      typeof iat !== 'number' ||
      (gty !== undefined && gty !== CLIENT_CREDENTIALS_CLAIM.gty) ||
      (gty === CLIENT_CREDENTIALS_CLAIM.gty && sub !== clientId) ||
      (act !== undefined && !isActClaim(act)) ||
      (gcid !== undefined && typeof gcid !== 'string') ||
      (cnf !== undefined && !isDpopConfirmation(cnf))
    ) {
      throw new InvalidAccessTokenError('missing claims');
    }
    const scopes = new Set(scope.split(' ').filter(Boolean));
    const kind = gty === CLIENT_CREDENTIALS_CLAIM.gty ? 'client' : 'user';
    const principal: AuthPrincipal = { kind, sub, clientId, scope, scopes, grantId: gid, jti, iat, exp, aud: aud as string | string[] };
    if (act !== undefined) principal.act = act as ActClaim;
    if (gcid !== undefined) principal.grantClientId = gcid as string;
    if (typeof acr === 'string') principal.acr = acr;
    if (typeof authTime === 'number') principal.authTime = authTime;
    if (cnf !== undefined) principal.jkt = (cnf as { jkt: string }).jkt;
    return { principal, kid };
  }
}

/** An RFC 8693 `act` claim: an object with a string `sub`, its `client_id` a string if any, its own `act` one too. */
function isActClaim(value: unknown): value is ActClaim {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { sub, client_id: clientId, act } = value as Record<string, unknown>;
  return typeof sub === 'string' && (clientId === undefined || typeof clientId === 'string') && (act === undefined || isActClaim(act));
}

/** RFC 9449 6.1: a `cnf` claim with the thumbprint (`jkt`) of the key the token is bound to. */
function isDpopConfirmation(value: unknown): value is { jkt: string } {
  return typeof value === 'object' && value !== null && typeof (value as { jkt?: unknown }).jkt === 'string';
}
