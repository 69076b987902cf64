import { acrOf } from '../../auth/acr';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { AppConfig } from '../../config/app-config';
import { AuditService } from '../../audit/audit.service';
import type { AuditEvent } from '../../audit/audit-event.entity';

import { SigningKeysService } from '../../keys/signing-keys.service';
import { type ActClaim, CLIENT_CREDENTIALS_CLAIM } from '../../auth/principal';
import type { Client } from '../entities/client.entity';
import type { Grant } from '../entities/grant.entity';
import { IdTokenIssuer, type LoginRef } from '../oidc/id-tokens';
import { OidcScope } from '../oidc/oidc.scopes';
import { signedWith } from './token-signing';
import { type NewRefreshToken, RefreshTokensRepository } from './refresh-tokens.repository';
import { hashSecret, randomSecret } from '../../crypto/secrets';

/**
 * What issuing needs of a grant, the access token's `aud` (RFC 8707; the API, `AUDIENCE`, when absent), and the
 * login for an ID token (issued when the scope has `openid`).
 */
export type GrantRef = Pick<Grant, 'id' | 'userId' | 'clientId' | 'expiresAt'> & { audience?: string | string[]; login?: LoginRef };

/** The success body of the token endpoint (RFC 6749 5.1). */
export interface TokenResponse {
  access_token: string;
  /** `DPoP` for a token bound to the key of the request's proof (RFC 9449 5). */
  token_type: 'Bearer' | 'DPoP';
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
  /** RFC 9068 2.2.1: how the person signed in (RFC 8176), when the grant's login says; `acr` follows from it. */
  amr?: string[];
  /** RFC 9068 2.2.1 / RFC 9470 4: when the person signed in, milliseconds since the epoch (claim `auth_time`, seconds). */
  authTime?: number;
  /** RFC 9449 6.1: the thumbprint of the key the token is bound to (`cnf.jkt`). */
  jkt?: string;
}

/**
 * RFC 9449: the thumbprint of the key of a token request's DPoP proof (the access token is bound to it), and the
 * key a new refresh token is bound to (a public client's: its refresh tokens are usable only with that key).
 */
export interface DpopBinding {
  jkt?: string;
  refreshJkt?: string;
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
    private readonly idTokens: IdTokenIssuer,
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
        ...(claims.amr ? { amr: claims.amr, acr: acrOf(claims.amr) } : {}),
        ...(claims.authTime !== undefined ? { auth_time: Math.floor(claims.authTime / 1000) } : {}),
        ...(claims.jkt ? { cnf: { jkt: claims.jkt } } : {}),
        iat,
        exp,
        jti,
      },
      signedWith(key.kid, 'at+jwt'),
    );
    return { token, jti, iat, exp };
  }

  /** A new refresh token: the secret for the client, shown once, and the hash to store. */
  newRefreshToken(): RefreshTokenSecret {
    const secret = randomSecret(32);
    return { secret, hash: hashSecret(secret) };
  }

  /**
   * The binding of a token request's tokens to the key of its DPoP proof (`jkt`): the access token always, and a
   * public client's refresh token too (RFC 9449 5: it has no other credential to bind it to).
   */
  static bindingFor(client: Pick<Client, 'isPublic'>, jkt: string | undefined): DpopBinding {
    return { jkt, refreshJkt: client.isPublic ? jkt : undefined };
  }

  /**
   * Tokens for `grant` with `scope` and `event` (its user and client the grant's): with a new refresh token stored
   * together with the event for a client allowed the refresh-token grant, else the event alone (a client gets no
   * refresh token it could not use).
   */
  async issueFor(client: Pick<Client, 'grantTypes'>, grant: GrantRef, scope: string, now: number, event: AuditEvent, binding: DpopBinding) {
    if (client.grantTypes.includes('refresh_token')) return this.issue(grant, scope, now, event, binding);
    await this.audit.save(event);
    return this.respond(grant, scope, undefined, binding.jkt);
  }

  /**
   * Tokens for `grant` with `scope`, storing the new refresh token together with `event` (its user and client are
   * the grant's), which is logged once both are. `binding`: the key of the request's DPoP proof, and whether the
   * refresh token is bound to it too (a public client's).
   */
  async issue(grant: GrantRef, scope: string, now: number, event: AuditEvent, binding: DpopBinding = {}): Promise<TokenResponse> {
    const refresh = this.newRefreshToken();
    await this.refreshTokens.insert(TokenIssuer.refreshTokenOf(grant, scope, refresh, binding.refreshJkt), now, event);
    this.audit.log(event);
    return this.respond(grant, scope, refresh, binding.jkt);
  }

  /**
   * Stores `refresh` for `grant` with `refreshScope` together with `event` (whose user and client are the grant's),
   * in the caller's unit of work, which logs the event once committed.
   */
  async storeRefreshToken(
    grant: GrantRef,
    now: number,
    event: AuditEvent,
    refreshScope: string,
    refresh: RefreshTokenSecret,
    refreshJkt?: string,
  ): Promise<void> {
    await this.refreshTokens.insert(TokenIssuer.refreshTokenOf(grant, refreshScope, refresh, refreshJkt), now, event);
  }

  /**
   * The row of a new refresh token for `grant` with `refreshScope`, bound to the key `refreshJkt` if given; the
   * family's lifetime is absolute.
   */
  static refreshTokenOf(grant: GrantRef, refreshScope: string, refresh: RefreshTokenSecret, refreshJkt?: string | null): NewRefreshToken {
    return {
      tokenHash: refresh.hash,
      grantId: grant.id,
      clientId: grant.clientId,
      userId: grant.userId,
      scope: refreshScope,
      expiresAt: grant.expiresAt,
      dpopJkt: refreshJkt ?? null,
    };
  }

  /**
   * The token response for a refresh token already stored (by {@link issue}, or by the caller's own statement),
   * or without one (a client not allowed the refresh-token grant).
   */
  respond(grant: GrantRef, scope: string, refresh?: RefreshTokenSecret, jkt?: string): TokenResponse {
    const access = this.mintAccessToken({
      sub: grant.userId,
      clientId: grant.clientId,
      scope,
      grantId: grant.id,
      audience: grant.audience,
      amr: grant.login?.amr,
      authTime: grant.login?.authTime,
      jkt,
    });
    const openid = grant.login !== undefined && scope.split(' ').includes(OidcScope.openid);
    return {
      access_token: access.token,
      token_type: jkt ? 'DPoP' : 'Bearer',
      expires_in: this.config.accessTokenTtl,
      ...(refresh ? { refresh_token: refresh.secret } : {}),
      scope,
      ...(openid ? { id_token: this.idTokens.mint(grant, grant.login!, access.token) } : {}),
    };
  }
}
