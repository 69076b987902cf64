import { createHash, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { type JwtModuleOptions, JwtSecretRequestType, JwtService, type JwtSignOptions } from '@nestjs/jwt';
import { AppConfig } from '../../config/app-config';
import { AuditService } from '../../audit/audit.service';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { type StatementWrite, epochMs } from '../../database/sql';
import { SigningKeysService } from '../../keys/signing-keys.service';
import { type ActClaim, CLIENT_CREDENTIALS_CLAIM } from '../../auth/principal';
import type { Grant } from '../entities/grant.entity';
import { OidcScope } from '../oidc/oidc.scopes';
import { type NewRefreshToken, RefreshTokensRepository } from './refresh-tokens.repository';
import { hashSecret, randomSecret } from '../../common/crypto/secrets';

/**
 * The login behind a grant, for its ID tokens: the time of the login (epoch ms), the session's `sid`, and — when the
 * tokens come from a code — the authorization request's `nonce`.
 */
export interface LoginRef {
  authTime: number;
  sid: string | null;
  nonce?: string | null;
}

/** The {@link LoginRef} of a grant's stored columns; undefined for a grant from before OpenID Connect. */
export function loginOf(authTime: string | number | null, sid: string | null, nonce?: string | null): LoginRef | undefined {
  const at = epochMs(authTime, true);
  return at === null ? undefined : { authTime: at, sid, nonce };
}

/**
 * What issuing needs of a grant, the access token's `aud` (RFC 8707; the API, `AUDIENCE`, when absent), and the
 * login for an ID token (issued when the scope has `openid`).
 */
export type GrantRef = Pick<Grant, 'id' | 'userId' | 'clientId' | 'expiresAt'> & { audience?: string | string[]; login?: LoginRef };

/** The success body of the token endpoint (RFC 6749 5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  /** Absent for the client-credentials grant (RFC 6749 4.4.3). */
  refresh_token?: string;
  scope: string;
  /** OpenID Connect: when the scope has `openid` (authorization code and refresh grants). */
  id_token?: string;
  /** RFC 8693 2.2.1: the kind of token a token exchange issued. */
  issued_token_type?: string;
}

export interface AccessTokenClaims {
  sub: string;
  clientId: string;
  scope: string;
  grantId: string;
  /** Set for a token a client obtained for itself (no user): `sub` is then the client id. */
  clientCredentials?: boolean;
  /** The resources it is for (RFC 8707); the API (`AUDIENCE`) when absent. */
  audience?: string | string[];
  /** RFC 8693 4.1: the actor of a token from a token exchange. */
  act?: ActClaim;
  /** The client of the grant a token exchange started from, when not `clientId` (claim `gcid`). */
  grantClientId?: string;
  /** Expiry (seconds since the epoch) when earlier than the usual lifetime's end: an exchanged token never outlives its subject token. */
  notAfter?: number;
}

export interface RefreshTokenSecret {
  secret: string;
  hash: string;
}

export interface MintedAccessToken {
  token: string;
  jti: string;
  /** Issued at and expiry, seconds since the epoch. */
  iat: number;
  exp: number;
}

/**
 * The sign options of a token: RS256 with the signing key `kid`, which {@link signingKeyProvider} resolves. The
 * registered claims (iss, sub, aud, jti) go in the payload rather than in jsonwebtoken's options, which it would
 * validate and copy there one by one, and the key is not in the options either, which `JwtService.sign` would
 * delete from its copy of them (a dictionary-mode object for V8).
 */
function signedWith(kid: string, typ: 'at+jwt' | 'JWT'): JwtSignOptions {
  return { algorithm: 'RS256', header: { alg: 'RS256', typ, kid } };
}

/**
 * `@nestjs/jwt`'s key provider for this module's `JwtService`: the private key named by the `kid` of the token's
 * header, which the caller took from {@link SigningKeysService.activeKey} in the same synchronous step. The
 * service only signs: verification of access tokens is the auth module's (with the published public keys).
 */
export function signingKeyProvider(keys: Pick<SigningKeysService, 'privateKeyOf'>): JwtModuleOptions['secretOrKeyProvider'] {
  return (requestType, _payload, options) => {
    if (requestType !== JwtSecretRequestType.SIGN) throw new Error('this JwtService signs only');
    const kid = (options as JwtSignOptions | undefined)?.header?.kid;
    const key = kid === undefined ? undefined : keys.privateKeyOf(kid);
    if (!key) throw new Error(`no private key for kid ${String(kid)}`);
    return key;
  };
}

/**
 * Issues what a grant yields: an RFC 9068 access token (RS256, `typ: at+jwt`, signed through `@nestjs/jwt` with
 * the active key from the keys module) and a new refresh token, stored only as a hash.
 */
@Injectable()
export class TokenIssuer {
  constructor(
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly audit: AuditService,
    private readonly jwt: JwtService,
    private readonly keys: SigningKeysService,
    private readonly config: AppConfig,
  ) {}

  mintAccessToken(claims: AccessTokenClaims): MintedAccessToken {
    const key = this.keys.activeKey();
    const iat = Math.floor(Date.now() / 1000);
    const exp = Math.min(iat + this.config.accessTokenTtl, claims.notAfter ?? Infinity);
    const jti = randomUUID();
    const token = this.jwt.sign(
      {
        iss: this.config.issuer,
        sub: claims.sub,
        aud: claims.audience ?? this.config.audience,
        client_id: claims.clientId,
        scope: claims.scope,
        gid: claims.grantId,
        ...(claims.clientCredentials ? CLIENT_CREDENTIALS_CLAIM : {}),
        ...(claims.act ? { act: claims.act } : {}),
        ...(claims.grantClientId ? { gcid: claims.grantClientId } : {}),
        iat,
        exp,
        jti,
      },
      signedWith(key.kid, 'at+jwt'),
    );
    return { token, jti, iat, exp };
  }

  /**
   * An OpenID Connect ID token (Core 1.0 2, 3.1.3.6): RS256 with the active key, for the client (`aud`), with the
   * login's `auth_time` and `sid`, the request's `nonce` when there was one, and `at_hash` of the access token it
   * comes with. The profile and email claims are not in it: UserInfo answers them (Core 5.4).
   */
  mintIdToken(grant: Pick<GrantRef, 'userId' | 'clientId'>, login: LoginRef, accessToken: string): string {
    const key = this.keys.activeKey();
    const iat = Math.floor(Date.now() / 1000);
    const digest = createHash('sha256').update(accessToken).digest();
    return this.jwt.sign(
      {
        iss: this.config.issuer,
        sub: grant.userId,
        aud: grant.clientId,
        auth_time: Math.floor(login.authTime / 1000),
        ...(login.nonce ? { nonce: login.nonce } : {}),
        ...(login.sid ? { sid: login.sid } : {}),
        at_hash: digest.subarray(0, digest.length / 2).toString('base64url'),
        iat,
        exp: iat + this.config.accessTokenTtl,
      },
      signedWith(key.kid, 'JWT'),
    );
  }

  /** A new refresh token: the secret for the client, shown once, and the hash to store. */
  newRefreshToken(): RefreshTokenSecret {
    const secret = randomSecret(32);
    return { secret, hash: hashSecret(secret) };
  }

  /**
   * Tokens for `grant` with `scope`, storing the new refresh token together with `event` (its user and client are
   * the grant's), which is logged once both are.
   */
  async issue(grant: GrantRef, scope: string, now: number, event: AuditEvent): Promise<TokenResponse> {
    const refresh = this.newRefreshToken();
    await this.refreshTokens.insert(TokenIssuer.refreshTokenOf(grant, scope, refresh), now, event);
    this.audit.log(event);
    return this.respond(grant, scope, refresh);
  }

  /**
   * The writes that store `refresh` for `grant` with `refreshScope` together with `event` (whose user and client
   * are the grant's), for a caller that makes them part of its unit of work.
   */
  refreshTokenWrites(grant: GrantRef, now: number, event: AuditEvent, refreshScope: string, refresh: RefreshTokenSecret): StatementWrite[] {
    return this.refreshTokens.insertWrites(TokenIssuer.refreshTokenOf(grant, refreshScope, refresh), now, event);
  }

  /** The row of a new refresh token for `grant` with `refreshScope`; the family's lifetime is absolute. */
  static refreshTokenOf(grant: GrantRef, refreshScope: string, refresh: RefreshTokenSecret): NewRefreshToken {
    return {
      tokenHash: refresh.hash,
      grantId: grant.id,
      clientId: grant.clientId,
      userId: grant.userId,
      scope: refreshScope,
      expiresAt: grant.expiresAt,
    };
  }

  /**
   * The token response for a refresh token already stored (by {@link issue}, or by the caller's own statement),
   * or without one (a client not allowed the refresh-token grant).
   */
  respond(grant: GrantRef, scope: string, refresh?: RefreshTokenSecret): TokenResponse {
    const access = this.mintAccessToken({
      sub: grant.userId,
      clientId: grant.clientId,
      scope,
      grantId: grant.id,
      audience: grant.audience,
    });
    const openid = grant.login !== undefined && scope.split(' ').includes(OidcScope.openid);
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: this.config.accessTokenTtl,
      ...(refresh ? { refresh_token: refresh.secret } : {}),
      scope,
      ...(openid ? { id_token: this.mintIdToken(grant, grant.login!, access.token) } : {}),
    };
  }
}
