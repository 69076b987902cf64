import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { AccessTokenService } from './access-token.service';
import { AuthorizationCode } from './entities/authorization-code.entity';
import type { Client } from './entities/client.entity';
import { Consent } from './entities/consent.entity';
import { Grant } from './entities/grant.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { OAuthError } from './oauth-error';
import { RevocationService } from './revocation.service';
import { PKCE_VALUE, hashSecret, randomSecret, s256 } from './secrets';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface IssueCodeInput {
  client: Client;
  userId: string;
  scope: string;
  redirectUri: string | null;
  codeChallenge: string | null;
}

export interface CodeExchangeInput {
  code?: string;
  redirectUri?: string;
  codeVerifier?: string;
}

export type Introspection =
  | { active: false }
  | {
      active: true;
      scope: string;
      client_id: string;
      sub: string;
      exp: number;
      iat: number;
      iss: string;
      aud: string;
      token_type: 'Bearer' | 'refresh_token';
    };

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/**
 * Grants and everything issued under them: authorization codes, refresh tokens (rotated, with reuse detection)
 * and access tokens. Single use is decided by one conditional UPDATE whose affected-row count picks the winner,
 * so it holds across requests, processes and instances.
 */
@Injectable()
export class GrantsService {
  constructor(
    @InjectRepository(Grant) private readonly grants: Repository<Grant>,
    @InjectRepository(AuthorizationCode) private readonly codes: Repository<AuthorizationCode>,
    @InjectRepository(RefreshToken) private readonly refreshTokens: Repository<RefreshToken>,
    @InjectRepository(Consent) private readonly consents: Repository<Consent>,
    private readonly accessTokens: AccessTokenService,
    private readonly revocations: RevocationService,
    private readonly config: AppConfig,
  ) {}

  /** Starts a grant and returns its authorization code (shown once; stored as a hash). */
  async issueCode(input: IssueCodeInput): Promise<string> {
    const now = Date.now();
    const grantId = randomUUID();
    await this.grants.insert({
      id: grantId,
      userId: input.userId,
      clientId: input.client.id,
      scope: input.scope,
      createdAt: now,
      expiresAt: now + this.config.refreshTokenTtl * 1000,
      revokedAt: null,
    });
    const code = randomSecret(32);
    await this.codes.insert({
      codeHash: hashSecret(code),
      grantId,
      clientId: input.client.id,
      userId: input.userId,
      redirectUri: input.redirectUri,
      scope: input.scope,
      codeChallenge: input.codeChallenge,
      createdAt: now,
      expiresAt: now + this.config.authCodeTtl * 1000,
      consumedAt: null,
    });
    return code;
  }

  async exchangeCode(client: Client, input: CodeExchangeInput): Promise<TokenResponse> {
    if (!input.code) throw new OAuthError('invalid_request', 'code is required.');
    if (input.codeVerifier !== undefined && !PKCE_VALUE.test(input.codeVerifier)) {
      throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 unreserved characters.');
    }
    const codeHash = hashSecret(input.code);
    const row = await this.codes.findOne({ where: { codeHash } });
    // A code of another client is not consumed: that client cannot burn it.
    if (!row || row.clientId !== client.id) throw invalidGrant('The authorization code is invalid.');

    const now = Date.now();
    // Read before the code is consumed: a concurrent replay revokes the grant as soon as the code is taken, and
    // must not make the one winning redemption fail (its tokens are revoked by that replay all the same).
    const grant = await this.liveGrant(row.grantId, now);
    const won = await this.codes.update({ codeHash, consumedAt: IsNull() }, { consumedAt: now });
    if (!won.affected) {
      // Presented a second time: whatever the first redemption issued is revoked (RFC 6749 4.1.2).
      await this.revokeGrant(row.grantId);
      throw invalidGrant('The authorization code was already used.');
    }
    // From here on the code is consumed, whatever the outcome.
    if (row.expiresAt <= now) throw invalidGrant('The authorization code has expired.');
    if (row.redirectUri !== null) {
      if (input.redirectUri === undefined) throw new OAuthError('invalid_request', 'redirect_uri is required.');
      if (input.redirectUri !== row.redirectUri) throw invalidGrant('redirect_uri does not match the authorization request.');
    } else if (input.redirectUri !== undefined && !client.redirectUris.includes(input.redirectUri)) {
      throw invalidGrant('redirect_uri does not match the authorization request.');
    }
    if (row.codeChallenge !== null) {
      if (input.codeVerifier === undefined) throw new OAuthError('invalid_request', 'code_verifier is required.');
      if (s256(input.codeVerifier) !== row.codeChallenge) throw invalidGrant('code_verifier does not match the code challenge.');
    } else if (input.codeVerifier !== undefined) {
      throw new OAuthError('invalid_request', 'code_verifier was sent for a code issued without a code challenge.');
    }
    return this.issueTokens(grant, row.scope, now);
  }

  async refresh(client: Client, presented: string | undefined, requestedScope: string | undefined): Promise<TokenResponse> {
    if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required.');
    const tokenHash = hashSecret(presented);
    const row = await this.refreshTokens.findOne({ where: { tokenHash } });
    if (!row || row.clientId !== client.id) throw invalidGrant('The refresh token is invalid.');
    const now = Date.now();
    if (row.rotatedAt !== null) {
      await this.revokeGrant(row.grantId);
      throw invalidGrant('The refresh token was already used; its grant is revoked.');
    }
    if (row.expiresAt <= now) throw invalidGrant('The refresh token has expired.');
    const grant = await this.liveGrant(row.grantId, now);

    let scope = row.scope;
    if (requestedScope !== undefined) {
      const granted = new Set(row.scope.split(' '));
      const requested = requestedScope.split(' ').filter(Boolean);
      if (requested.length === 0 || requested.some((s) => !granted.has(s))) {
        throw new OAuthError('invalid_scope', 'The requested scope exceeds the scope of the grant.');
      }
      scope = [...new Set(requested)].join(' ');
    }

    const won = await this.refreshTokens.update({ tokenHash, rotatedAt: IsNull() }, { rotatedAt: now });
    if (!won.affected) {
      await this.revokeGrant(row.grantId);
      throw invalidGrant('The refresh token was already used; its grant is revoked.');
    }
    return this.issueTokens(grant, scope, now, row.scope);
  }

  /** RFC 7009: revokes the grant of a refresh or access token of this client; anything else is ignored. */
  async revokeToken(client: Client, token: string): Promise<void> {
    const refresh = await this.refreshTokens.findOne({ where: { tokenHash: hashSecret(token) } });
    if (refresh) {
      if (refresh.clientId === client.id) await this.revokeGrant(refresh.grantId);
      return;
    }
    const access = await this.accessTokens.verifySignatureAndClaims(token).catch(() => undefined);
    if (access && access.clientId === client.id) await this.revokeGrant(access.grantId);
  }

  /** RFC 7662 for the calling client's own tokens; everything else is inactive and says nothing more. */
  async introspect(client: Client, token: string): Promise<Introspection> {
    const now = Date.now();
    const refresh = token.includes('.') ? null : await this.refreshTokens.findOne({ where: { tokenHash: hashSecret(token) } });
    if (refresh) {
      if (refresh.clientId !== client.id || refresh.rotatedAt !== null || refresh.expiresAt <= now) return { active: false };
      if (!(await this.isGrantLive(refresh.grantId, now))) return { active: false };
      return {
        active: true,
        scope: refresh.scope,
        client_id: refresh.clientId,
        sub: refresh.userId,
        exp: Math.floor(refresh.expiresAt / 1000),
        iat: Math.floor(refresh.createdAt / 1000),
        iss: this.config.issuer,
        aud: this.config.audience,
        token_type: 'refresh_token',
      };
    }
    const access = await this.accessTokens.verifySignatureAndClaims(token).catch(() => undefined);
    if (!access || access.clientId !== client.id || access.exp * 1000 <= now) return { active: false };
    if (this.revocations.isRevoked(access.grantId) || !(await this.isGrantLive(access.grantId, now))) return { active: false };
    return {
      active: true,
      scope: access.scope,
      client_id: access.clientId,
      sub: access.sub,
      exp: access.exp,
      iat: access.iat,
      iss: this.config.issuer,
      aud: this.config.audience,
      token_type: 'Bearer',
    };
  }

  /** Revokes a grant: its refresh tokens stop working at once, its access tokens within REVOCATION_SYNC_SECONDS. */
  async revokeGrant(grantId: string): Promise<void> {
    const now = Date.now();
    await this.grants.update({ id: grantId, revokedAt: IsNull() }, { revokedAt: now });
    await this.revocations.revoke([grantId]);
    await this.refreshTokens.delete({ grantId, rotatedAt: IsNull() });
  }

  /** The scopes this user already granted to this client. */
  async consentedScopes(userId: string, clientId: string): Promise<Set<string>> {
    const row = await this.consents.findOne({ where: { userId, clientId } });
    return new Set(row ? row.scope.split(' ').filter(Boolean) : []);
  }

  async recordConsent(userId: string, clientId: string, scope: string): Promise<void> {
    const merged = await this.consentedScopes(userId, clientId);
    for (const s of scope.split(' ')) if (s) merged.add(s);
    await this.consents.upsert({ userId, clientId, scope: [...merged].join(' '), updatedAt: Date.now() }, ['userId', 'clientId']);
  }

  private async liveGrant(grantId: string, now: number): Promise<Grant> {
    const grant = await this.grants.findOne({ where: { id: grantId } });
    if (!grant || grant.revokedAt !== null || grant.expiresAt <= now) throw invalidGrant('The grant is no longer valid.');
    return grant;
  }

  private async isGrantLive(grantId: string, now: number): Promise<boolean> {
    const grant = await this.grants.findOne({ where: { id: grantId }, select: { id: true, revokedAt: true, expiresAt: true } });
    return Boolean(grant && grant.revokedAt === null && grant.expiresAt > now);
  }

  private async issueTokens(grant: Grant, scope: string, now: number, refreshScope = scope): Promise<TokenResponse> {
    const refresh = randomSecret(32);
    await this.refreshTokens.insert({
      tokenHash: hashSecret(refresh),
      grantId: grant.id,
      clientId: grant.clientId,
      userId: grant.userId,
      scope: refreshScope,
      createdAt: now,
      // The family's lifetime is absolute: rotation never extends it.
      expiresAt: grant.expiresAt,
      rotatedAt: null,
    });
    const access = await this.accessTokens.mint({ sub: grant.userId, clientId: grant.clientId, scope, grantId: grant.id });
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: this.config.accessTokenTtl,
      refresh_token: refresh,
      scope,
    };
  }
}
