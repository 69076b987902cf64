import { Injectable } from '@nestjs/common';
import { SqlRunner, epochMs, sql } from '../database/sql';
import type { Client } from './entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthError } from './oauth-error';
import { hashSecret } from './secrets';
import { TokenIssuer, type TokenResponse } from './token-issuer.service';

/** The refresh token with its grant's state, in one round trip. */
const FIND_REFRESH_TOKEN = sql`
  SELECT r.grant_id, r.client_id, r.user_id, r.scope, r.expires_at, r.rotated_at,
    g.revoked_at AS grant_revoked_at, g.expires_at AS grant_expires_at
  FROM refresh_tokens r LEFT JOIN grants g ON g.id = r.grant_id
  WHERE r.token_hash = :tokenHash`;
const ROTATE_REFRESH_TOKEN = sql`
  UPDATE refresh_tokens SET rotated_at = :now WHERE token_hash = :tokenHash AND rotated_at IS NULL`;
/**
 * PostgreSQL, a refresh that keeps the grant's scope: rotation and the new refresh token in one statement (one
 * round trip), done only when the token is this client's, unrotated and live, and its grant is live. When it
 * returns no row, the refresh goes the long way, which finds out why (and revokes the grant on reuse).
 */
const ROTATE_AND_ISSUE = sql`
  WITH rotated AS (
    UPDATE refresh_tokens r SET rotated_at = :now
    FROM grants g
    WHERE r.token_hash = :tokenHash AND r.client_id = :clientId AND r.rotated_at IS NULL AND r.expires_at > :now
      AND g.id = r.grant_id AND g.revoked_at IS NULL AND g.expires_at > :now
    RETURNING r.grant_id, r.user_id, r.scope, g.expires_at AS grant_expires_at),
  issued AS (
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at)
    SELECT :nextHash, grant_id, :clientId, user_id, scope, CAST(:now AS bigint), grant_expires_at, NULL FROM rotated
    RETURNING 1)
  SELECT rotated.* FROM rotated WHERE EXISTS (SELECT 1 FROM issued)`;

interface RefreshTokenRow {
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  expires_at: string | number;
  rotated_at: string | number | null;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
}

type RotatedRow = Pick<RefreshTokenRow, 'grant_id' | 'user_id' | 'scope'> & { grant_expires_at: string | number };

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
    private readonly db: SqlRunner,
    private readonly lifecycle: GrantRevocationService,
    private readonly issuer: TokenIssuer,
  ) {}

  async refresh(client: Client, presented: string | undefined, requestedScope: string | undefined): Promise<TokenResponse> {
    if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required.');
    const tokenHash = hashSecret(presented);
    const now = Date.now();
    if (this.db.postgres && requestedScope === undefined) {
      const next = this.issuer.newRefreshToken();
      const rotated = await this.db.one<RotatedRow>(ROTATE_AND_ISSUE, { now, tokenHash, clientId: client.id, nextHash: next.hash });
      if (rotated) {
        const expiresAt = epochMs(rotated.grant_expires_at);
        const grant = { id: rotated.grant_id, userId: rotated.user_id, clientId: client.id, expiresAt };
        return this.issuer.respond(grant, rotated.scope, next);
      }
    }
    const row = await this.db.one<RefreshTokenRow>(FIND_REFRESH_TOKEN, { tokenHash });
    if (!row || row.client_id !== client.id) throw invalidGrant('The refresh token is invalid.');
    if (row.rotated_at !== null) {
      await this.lifecycle.revokeGrant(row.grant_id);
      throw invalidGrant('The refresh token was already used; its grant is revoked.');
    }
    if (epochMs(row.expires_at) <= now) throw invalidGrant('The refresh token has expired.');
    const grantExpiresAt = epochMs(row.grant_expires_at, true);
    if (grantExpiresAt === null || row.grant_revoked_at !== null || grantExpiresAt <= now) {
      throw invalidGrant('The grant is no longer valid.');
    }

    let scope = row.scope;
    if (requestedScope !== undefined) {
      const granted = new Set(row.scope.split(' '));
      const requested = requestedScope.split(' ').filter(Boolean);
      if (requested.length === 0 || requested.some((s) => !granted.has(s))) {
        throw new OAuthError('invalid_scope', 'The requested scope exceeds the scope of the grant.');
      }
      scope = [...new Set(requested)].join(' ');
    }

    const won = await this.db.run(ROTATE_REFRESH_TOKEN, { now, tokenHash });
    if (!won.affected) {
      await this.lifecycle.revokeGrant(row.grant_id);
      throw invalidGrant('The refresh token was already used; its grant is revoked.');
    }
    const grant = { id: row.grant_id, userId: row.user_id, clientId: row.client_id, expiresAt: grantExpiresAt };
    return this.issuer.issue(grant, scope, now, row.scope);
  }
}
