import { Injectable } from '@nestjs/common';
import { AUDIT_ROW } from '../audit/audit.repository';
import { AuditService } from '../audit/audit.service';
import type { AuditContext } from '../audit/audit-events';
import type { AuditEvent } from '../audit/audit-event.entity';
import { SqlRunner, Statement, epochMs, sql } from '../database/sql';
import { MetricsService } from '../metrics/metrics.service';
import { scopesHeld } from '../auth/scopes';
import { UsersService } from '../users/users.service';
import type { Client } from './entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthError } from './oauth-error';
import { ResourceIndicators } from './resource-indicators';
import { hashSecret, openWith, sealFor } from './secrets';
import { TokenIssuer, type TokenResponse, loginOf } from './token-issuer.service';

/** The refresh token with its grant's state, in one round trip. */
const FIND_REFRESH_TOKEN = sql`
  SELECT r.grant_id, r.client_id, r.user_id, r.scope, r.expires_at, r.rotated_at, r.successor_sealed,
    g.revoked_at AS grant_revoked_at, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
    g.auth_time AS grant_auth_time, g.sid AS grant_sid
  FROM refresh_tokens r LEFT JOIN grants g ON g.id = r.grant_id
  WHERE r.token_hash = :tokenHash`;
const ROTATE_REFRESH_TOKEN = sql`
  UPDATE refresh_tokens SET rotated_at = :now, successor_sealed = :sealed WHERE token_hash = :tokenHash AND rotated_at IS NULL`;
/**
 * The rotation grace is used once: whoever clears the sealed successor first gets it — and only while the
 * successor itself is still unused (checked in the same statement, so a rotation of the successor in between
 * cannot slip through).
 */
const USE_GRACE = sql`
  UPDATE refresh_tokens SET successor_sealed = NULL
  WHERE token_hash = :tokenHash AND successor_sealed IS NOT NULL
    AND EXISTS (SELECT 1 FROM refresh_tokens s WHERE s.token_hash = :successorHash AND s.rotated_at IS NULL)`;
/**
 * PostgreSQL, a refresh that keeps the grant's scope: rotation and the new refresh token in one statement (one
 * round trip), done only when the token is this client's, unrotated and live, and its grant is live. When it
 * returns no row, the refresh goes the long way, which finds out why (and revokes the grant on reuse).
 *
 * The grant is looked at by its key from the token's row (a subquery per row), not joined in the UPDATE: with the
 * join, PostgreSQL's cached plan of a fresh database, made while `grants` was a page or two and never analyzed,
 * read every grant on every refresh until autovacuum's first ANALYZE (a minute or more): on the bench's flow with a
 * refresh, 0.9 -> 2.5 ms of PostgreSQL's CPU per flow within half a minute, 4,600 grants read per refresh.
 */
const ROTATE_AND_ISSUE = new Statement(`
  WITH rotated AS (
    UPDATE refresh_tokens r SET rotated_at = :now, successor_sealed = :sealed
    WHERE r.token_hash = :tokenHash AND r.client_id = :clientId AND r.rotated_at IS NULL AND r.expires_at > :now
      AND (SELECT g.revoked_at IS NULL AND g.expires_at > :now FROM grants g WHERE g.id = r.grant_id)
    RETURNING r.grant_id, r.user_id, r.scope),
  live AS (
    SELECT rotated.*, g.expires_at AS grant_expires_at, g.resources AS grant_resources, g.auth_time AS grant_auth_time,
      g.sid AS grant_sid
    FROM rotated JOIN grants g ON g.id = rotated.grant_id),
  issued AS (
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at)
    SELECT :nextHash, grant_id, :clientId, user_id, scope, CAST(:now AS bigint), grant_expires_at, NULL FROM live
    RETURNING user_id),
  audit AS (
    ${AUDIT_ROW.insert}
    SELECT :auditId, CAST(:now AS bigint), :auditType, :auditActor, user_id, :clientId, :auditAddress, :auditRequestId, :auditDetails
    FROM issued)
  SELECT live.* FROM live WHERE EXISTS (SELECT 1 FROM issued)`);

/**
 * What {@link ROTATE_AND_ISSUE} returned, read back by the successor it stored: when the connection is lost before
 * its answer, the rotation may have committed (see SqlRunner.oneOrOutcome).
 */
const PRESENTED_SETTLED = new Statement(`SELECT 1 FROM refresh_tokens WHERE token_hash = :tokenHash FOR UPDATE`);
const ROTATED_OUTCOME = new Statement(`
  SELECT r.grant_id, r.user_id, r.scope, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
    g.auth_time AS grant_auth_time, g.sid AS grant_sid
  FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
  WHERE r.token_hash = :nextHash AND r.client_id = :clientId`);

interface RefreshTokenRow {
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  expires_at: string | number;
  rotated_at: string | number | null;
  successor_sealed: string | null;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
  grant_resources: string | null;
  grant_auth_time: string | number | null;
  grant_sid: string | null;
}

type RotatedRow = Pick<RefreshTokenRow, 'grant_id' | 'user_id' | 'scope' | 'grant_resources' | 'grant_auth_time' | 'grant_sid'> & {
  grant_expires_at: string | number;
};

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/**
 * The refresh-token grant (RFC 6749 6) with rotation: every use returns a new refresh token, and presenting a
 * rotated one revokes the whole grant (RFC 9700 4.14.2) — unless the client has a rotation grace and this is the
 * first time the just-rotated token comes back within it (a client that lost the response and retries): then the
 * answer carries the same successor, sealed at rotation under the rotated token's own secret, and a new access
 * token. A second return, a return after the grace, or one after the successor was itself used still revokes.
 */
@Injectable()
export class RefreshGrantService {
  constructor(
    private readonly db: SqlRunner,
    private readonly lifecycle: GrantRevocationService,
    private readonly issuer: TokenIssuer,
    private readonly resources: ResourceIndicators,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly users: UsersService,
  ) {}

  /**
   * The scopes of a refreshed token: a scope bound to a role the person no longer has (or a grant from before such
   * bindings) is left out, as at /authorize; nothing left is `invalid_scope`.
   */
  private async heldScope(userId: string, scope: string): Promise<string> {
    const scopes = scope.split(' ');
    const held = await scopesHeld(scopes, () => this.users.roleOf(userId));
    if (held.length === scopes.length) return scope;
    if (held.length === 0) throw new OAuthError('invalid_scope', "The grant's scopes need a role the user does not have.");
    return held.join(' ');
  }

  async refresh(
    client: Client,
    presented: string | undefined,
    requestedScope: string | undefined,
    resource: string | undefined,
    context: AuditContext,
  ): Promise<TokenResponse> {
    if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required.');
    const tokenHash = hashSecret(presented);
    const now = Date.now();
    const event = AuditService.event({ type: 'refresh.rotated', actor: `client:${client.id}`, clientId: client.id }, context, now);
    const next = this.issuer.newRefreshToken();
    const sealed = client.refreshGraceSeconds > 0 ? sealFor(presented, next.secret) : null;
    if (this.db.postgres && requestedScope === undefined && resource === undefined) {
      const params = { now, tokenHash, clientId: client.id, nextHash: next.hash, sealed, ...AuditService.params(event) };
      const rotated = await this.db.oneOrOutcome<RotatedRow>(ROTATE_AND_ISSUE, params, {
        settle: PRESENTED_SETTLED,
        outcome: ROTATED_OUTCOME,
      });
      if (rotated) {
        this.audit.log({ ...event, userId: rotated.user_id });
        const expiresAt = epochMs(rotated.grant_expires_at);
        const audience = this.resources.audienceFor([], rotated.grant_resources);
        const login = loginOf(rotated.grant_auth_time, rotated.grant_sid);
        const grant = { id: rotated.grant_id, userId: rotated.user_id, clientId: client.id, expiresAt, audience, login };
        return this.issuer.respond(grant, await this.heldScope(rotated.user_id, rotated.scope), next);
      }
    }
    const row = await this.db.one<RefreshTokenRow>(FIND_REFRESH_TOKEN, { tokenHash });
    if (!row || row.client_id !== client.id) throw invalidGrant('The refresh token is invalid.');
    event.userId = row.user_id;
    if (row.rotated_at !== null) return this.presentedAgain(client, row, presented, { requestedScope, resource }, event);
    const grantExpiresAt = liveGrantExpiry(row, now);
    const scope = narrowed(row.scope, requestedScope);
    const audience = this.resources.audienceFor(this.resources.atTokenEndpoint(client, resource), row.grant_resources);

    const login = loginOf(row.grant_auth_time, row.grant_sid);
    const grant = { id: row.grant_id, userId: row.user_id, clientId: row.client_id, expiresAt: grantExpiresAt, audience, login };
    // The rotation and its successor (with the event) together: a crash in between cannot leave a rotated token
    // without the successor it was rotated to.
    const [won] = await this.db.atomic([
      { statement: ROTATE_REFRESH_TOKEN, params: { now, tokenHash, sealed } },
      ...this.issuer.refreshTokenWrites(grant, now, event, row.scope, next, true),
    ]);
    if (!won) {
      // Another request rotated it in between: this one is a second presentation.
      const again = await this.db.one<RefreshTokenRow>(FIND_REFRESH_TOKEN, { tokenHash });
      return this.presentedAgain(client, again ?? row, presented, { requestedScope, resource }, event);
    }
    this.audit.log(event);
    return this.issuer.respond(grant, await this.heldScope(row.user_id, scope), next);
  }

  /**
   * A rotated refresh token presented again: its one successor within the client's grace (a `refresh.rotated`
   * event marked `retried`), else the grant dies (`refresh.reused`).
   */
  private async presentedAgain(
    client: Client,
    row: RefreshTokenRow,
    presented: string,
    requested: { requestedScope: string | undefined; resource: string | undefined },
    event: AuditEvent,
  ): Promise<TokenResponse> {
    const now = event.at;
    const rotatedAt = epochMs(row.rotated_at, true);
    const inGrace = row.successor_sealed !== null && rotatedAt !== null && now - rotatedAt <= client.refreshGraceSeconds * 1000;
    const secret = inGrace ? openWith(presented, row.successor_sealed!) : undefined;
    if (secret !== undefined) {
      const hash = hashSecret(secret);
      const successor = await this.db.one<RefreshTokenRow>(FIND_REFRESH_TOKEN, { tokenHash: hash });
      // Rotated a moment ago by a concurrent request that has not stored the successor yet: nothing to give, nothing to revoke.
      if (!successor) throw invalidGrant('The refresh token was just rotated; present its successor.');
      if (successor.rotated_at === null && successor.client_id === client.id) {
        const grantExpiresAt = liveGrantExpiry(successor, now);
        const scope = narrowed(successor.scope, requested.requestedScope);
        const audience = this.resources.audienceFor(this.resources.atTokenEndpoint(client, requested.resource), successor.grant_resources);
        const retried = { ...event, details: JSON.stringify({ retried: true }) };
        const [used] = await this.db.atomic([
          { statement: USE_GRACE, params: { tokenHash: hashSecret(presented), successorHash: hash } },
          AuditService.writeOf(retried, { onlyIfChanged: true }),
        ]);
        if (used) {
          this.audit.log(retried);
          const login = loginOf(successor.grant_auth_time, successor.grant_sid);
          const grant = {
            id: successor.grant_id,
            userId: successor.user_id,
            clientId: client.id,
            expiresAt: grantExpiresAt,
            audience,
            login,
          };
          return this.issuer.respond(grant, await this.heldScope(successor.user_id, scope), { secret, hash });
        }
      }
    }
    this.metrics.refreshTokenReused();
    await this.lifecycle.revokeGrant(row.grant_id, { ...event, type: 'refresh.reused', userId: row.user_id });
    throw invalidGrant('The refresh token was already used; its grant is revoked.');
  }
}

/** The grant's expiry when the refresh token and its grant are live; else the refresh is refused. */
function liveGrantExpiry(row: RefreshTokenRow, now: number): number {
  if (epochMs(row.expires_at) <= now) throw invalidGrant('The refresh token has expired.');
  const grantExpiresAt = epochMs(row.grant_expires_at, true);
  if (grantExpiresAt === null || row.grant_revoked_at !== null || grantExpiresAt <= now) {
    throw invalidGrant('The grant is no longer valid.');
  }
  return grantExpiresAt;
}

/** The access token's scope: the requested subset of the refresh token's, or all of it. */
function narrowed(granted: string, requested: string | undefined): string {
  if (requested === undefined) return granted;
  const allowed = new Set(granted.split(' '));
  const scopes = requested.split(' ').filter(Boolean);
  if (scopes.length === 0 || scopes.some((s) => !allowed.has(s))) {
    throw new OAuthError('invalid_scope', 'The requested scope exceeds the scope of the grant.');
  }
  return [...new Set(scopes)].join(' ');
}
