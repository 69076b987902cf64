import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import type { Client } from './entities/client.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthError } from './oauth-error';
import { hashSecret } from './secrets';
import { TokenIssuer, type TokenResponse } from './token-issuer.service';

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/**
 * The refresh-token grant (RFC 6749 6) with rotation: every use returns a new refresh token, and presenting a
 * rotated one revokes the whole grant (RFC 9700 4.14.2).
 */
@Injectable()
export class RefreshGrantService {
  constructor(
    @InjectRepository(RefreshToken) private readonly refreshTokens: Repository<RefreshToken>,
    private readonly lifecycle: GrantRevocationService,
    private readonly issuer: TokenIssuer,
  ) {}

  async refresh(client: Client, presented: string | undefined, requestedScope: string | undefined): Promise<TokenResponse> {
    if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required.');
    const tokenHash = hashSecret(presented);
    const row = await this.refreshTokens.findOne({ where: { tokenHash } });
    if (!row || row.clientId !== client.id) throw invalidGrant('The refresh token is invalid.');
    const now = Date.now();
    if (row.rotatedAt !== null) {
      await this.lifecycle.revokeGrant(row.grantId);
      throw invalidGrant('The refresh token was already used; its grant is revoked.');
    }
    if (row.expiresAt <= now) throw invalidGrant('The refresh token has expired.');
    const grant = await this.lifecycle.liveGrant(row.grantId, now);

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
      await this.lifecycle.revokeGrant(row.grantId);
      throw invalidGrant('The refresh token was already used; its grant is revoked.');
    }
    return this.issuer.issue(grant, scope, now, row.scope);
  }
}
