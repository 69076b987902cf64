import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { AuthorizationCode } from './entities/authorization-code.entity';
import type { Client } from './entities/client.entity';
import { Grant } from './entities/grant.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthConfig } from './oauth.config';
import { OAuthError } from './oauth-error';
import { PKCE_VALUE, hashSecret, randomSecret, s256 } from './secrets';
import { TokenIssuer, type TokenResponse } from './token-issuer.service';

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

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/**
 * The authorization-code grant (RFC 6749 4.1 with RFC 7636 PKCE): a code starts a grant; redeeming it is decided
 * by one conditional UPDATE whose affected-row count picks the one winner, across requests and instances.
 */
@Injectable()
export class CodeGrantService {
  constructor(
    @InjectRepository(Grant) private readonly grants: Repository<Grant>,
    @InjectRepository(AuthorizationCode) private readonly codes: Repository<AuthorizationCode>,
    private readonly lifecycle: GrantRevocationService,
    private readonly issuer: TokenIssuer,
    private readonly config: OAuthConfig,
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

  async exchange(client: Client, input: CodeExchangeInput): Promise<TokenResponse> {
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
    const grant = await this.lifecycle.liveGrant(row.grantId, now);
    const won = await this.codes.update({ codeHash, consumedAt: IsNull() }, { consumedAt: now });
    if (!won.affected) {
      // Presented a second time: whatever the first redemption issued is revoked (RFC 6749 4.1.2).
      await this.lifecycle.revokeGrant(row.grantId);
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
    return this.issuer.issue(grant, row.scope, now);
  }
}
