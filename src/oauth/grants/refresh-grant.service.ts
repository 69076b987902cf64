import { Injectable } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import type { AuditContext } from '../../audit/audit-events';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { epochMs } from '../../database/sql';
import { MetricsService } from '../../metrics/metrics.service';
import { scopesHeld } from '../../auth/scopes';
import { UsersService } from '../../users/users.service';
import type { Client } from '../entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthError } from '../oauth-error';
import { type RefreshTokenRow, RefreshTokensRepository } from './refresh-tokens.repository';
import { ResourceIndicators } from '../resource-indicators';
import { hashSecret, openWith, sealFor } from '../../crypto/secrets';
import { loginOf } from '../oidc/id-tokens';
import { TokenIssuer, type TokenResponse } from './token-issuer.service';
import { LostAnswers } from './lost-answers';
import { isDatabaseUnavailable } from '../../database/database-errors';

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
    private readonly tokens: RefreshTokensRepository,
    private readonly lifecycle: GrantRevocationService,
    private readonly issuer: TokenIssuer,
    private readonly resources: ResourceIndicators,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly users: UsersService,
    private readonly lostAnswers: LostAnswers,
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
    jkt?: string,
  ): Promise<TokenResponse> {
    if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required.');
    const tokenHash = hashSecret(presented);
    const now = Date.now();
    const event = AuditService.event({ type: 'refresh.rotated', actor: `client:${client.id}`, clientId: client.id }, context, now);
    const next = this.issuer.newRefreshToken();
    // Sealed for every rotation: a retry after a lost answer gets it too, not only a client's grace.
    const sealed = sealFor(presented, next.secret);
    const row = await this.tokens.find(tokenHash);
    if (!row || row.client_id !== client.id) throw invalidGrant('The refresh token is invalid.');
    // RFC 9449 5: a public client's refresh token works only with a proof of its key. Without it, it is not a use
    // (a thief holding only the token neither refreshes nor gets the grant revoked).
    if (row.dpop_jkt !== null && row.dpop_jkt !== jkt) {
      throw invalidGrant('This refresh token is bound to a key: present a DPoP proof of that key.');
    }
    event.userId = row.user_id;
    if (row.rotated_at !== null) return this.presentedAgain(client, row, presented, { requestedScope, resource, jkt }, event);
    const grantExpiresAt = liveGrantExpiry(row, now);
    const scope = narrowed(row.scope, requestedScope);
    const audience = this.resources.audienceFor(this.resources.atTokenEndpoint(client, resource), row.grant_resources);

    const login = loginOf(row.grant_auth_time, row.grant_sid, null, row.grant_amr);
    const grant = { id: row.grant_id, userId: row.user_id, clientId: row.client_id, expiresAt: grantExpiresAt, audience, login };
    // The rotation and its successor (with the event) together: a crash in between cannot leave a rotated token
    // without the successor it was rotated to.
    const successor = TokenIssuer.refreshTokenOf(grant, row.scope, next, row.dpop_jkt);
    let rotated: boolean;
    try {
      rotated = await this.tokens.rotate(tokenHash, sealed, now, successor, event);
    } catch (error) {
      // Committed or not, nobody knows until the database answers: its retry must not look like reuse.
      if (isDatabaseUnavailable(error)) this.lostAnswers.record('rotation', tokenHash, now);
      throw error;
    }
    if (!rotated) {
      // Another request rotated it in between: this one is a second presentation.
      const again = await this.tokens.find(tokenHash);
      return this.presentedAgain(client, again ?? row, presented, { requestedScope, resource, jkt }, event);
    }
    this.audit.log(event);
    return this.issuer.respond(grant, await this.heldScope(row.user_id, scope), next, jkt);
  }

  /**
   * A rotated refresh token presented again: its one successor within the client's grace (a `refresh.rotated`
   * event marked `retried`), else the grant dies (`refresh.reused`).
   */
  private async presentedAgain(
    client: Client,
    row: RefreshTokenRow,
    presented: string,
    requested: { requestedScope: string | undefined; resource: string | undefined; jkt: string | undefined },
    event: AuditEvent,
  ): Promise<TokenResponse> {
    const now = event.at;
    const rotatedAt = epochMs(row.rotated_at, true);
    const retryUntil = epochMs(row.retry_until, true);
    const retry =
      rotatedAt !== null &&
      ((client.refreshGraceSeconds > 0 && now - rotatedAt <= client.refreshGraceSeconds * 1000) ||
        (retryUntil !== null && now <= retryUntil) ||
        this.lostAnswers.holds('rotation', hashSecret(presented), rotatedAt));
    const inGrace = row.successor_sealed !== null && retry;
    const secret = inGrace ? openWith(presented, row.successor_sealed!) : undefined;
    if (secret !== undefined) {
      const hash = hashSecret(secret);
      const successor = await this.tokens.find(hash);
      // Rotated a moment ago by a concurrent request that has not stored the successor yet: nothing to give, nothing to revoke.
      if (!successor) throw invalidGrant('The refresh token was just rotated; present its successor.');
      if (successor.rotated_at === null && successor.client_id === client.id) {
        const grantExpiresAt = liveGrantExpiry(successor, now);
        const scope = narrowed(successor.scope, requested.requestedScope);
        const audience = this.resources.audienceFor(this.resources.atTokenEndpoint(client, requested.resource), successor.grant_resources);
        const retried = { ...event, details: JSON.stringify({ retried: true }) };
        if (await this.tokens.useGrace(hashSecret(presented), hash, retried)) {
          this.audit.log(retried);
          const login = loginOf(successor.grant_auth_time, successor.grant_sid, null, successor.grant_amr);
          const grant = {
            id: successor.grant_id,
            userId: successor.user_id,
            clientId: client.id,
            expiresAt: grantExpiresAt,
            audience,
            login,
          };
          return this.issuer.respond(grant, await this.heldScope(successor.user_id, scope), { secret, hash }, requested.jkt);
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
