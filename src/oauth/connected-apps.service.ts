import type { AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { Injectable } from '@nestjs/common';
import { scopeDescription } from '../auth/scopes';
import { SqlRunner, epochMs, sql } from '../database/sql';
import { RevokedGrantsService } from '../auth/revoked-grants.service';
import { isClientId } from './clients.service';
import type { ConnectedAppView } from './pages';

/**
 * A person's grants in force (not revoked, not expired), each with the newest token issued under it: the refresh
 * tokens are kept when rotated, so the newest one's creation is the last redemption or refresh.
 */
const LIVE_GRANTS = sql`
  SELECT g.client_id, c.name, g.scope, g.created_at, MAX(r.created_at) AS last_token_at
  FROM grants g
  JOIN clients c ON c.id = g.client_id
  LEFT JOIN refresh_tokens r ON r.grant_id = g.id
  WHERE g.user_id = :userId AND g.revoked_at IS NULL AND g.expires_at > :now
  GROUP BY g.id, g.client_id, c.name, g.scope, g.created_at`;
const CONSENTS = sql`
  SELECT co.client_id, c.name, co.scope, co.updated_at
  FROM consents co JOIN clients c ON c.id = co.client_id
  WHERE co.user_id = :userId`;

const UNREVOKED_GRANTS = sql`SELECT id FROM grants WHERE user_id = :userId AND client_id = :clientId AND revoked_at IS NULL`;
const CONSENT = sql`SELECT 1 AS found FROM consents WHERE user_id = :userId AND client_id = :clientId`;
const DELETE_CONSENT = sql`DELETE FROM consents WHERE user_id = :userId AND client_id = :clientId`;
/** The person's grants of the client not revoked yet, on the revoked list (before they are marked, below). */
const LIST_GRANTS_REVOKED = sql`
  INSERT INTO revoked_grants (grant_id, revoked_at, expires_at)
  SELECT id, :now, :expiresAt FROM grants WHERE user_id = :userId AND client_id = :clientId AND revoked_at IS NULL
  ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at, expires_at = excluded.expires_at`;
const REVOKE_GRANTS = sql`
  UPDATE grants SET revoked_at = :now WHERE user_id = :userId AND client_id = :clientId AND revoked_at IS NULL`;
/** The unrotated refresh tokens of the person's grants of the client (dead already; as revokeGrant does). */
const DELETE_REFRESH_TOKENS = sql`
  DELETE FROM refresh_tokens
  WHERE client_id = :clientId AND rotated_at IS NULL
    AND grant_id IN (SELECT id FROM grants WHERE user_id = :userId AND client_id = :clientId)`;

interface GrantRow {
  client_id: string;
  name: string;
  scope: string;
  created_at: string | number;
  last_token_at: string | number | null;
}

interface ConsentRow {
  client_id: string;
  name: string;
  scope: string;
  updated_at: string | number;
}

export type RevokeAppResult = 'revoked' | 'not-connected' | 'malformed';

/**
 * The applications a person has let into their account — a grant in force or a recorded consent — and the
 * withdrawal of that access. Every query is scoped by the person as well as the client.
 */
@Injectable()
export class ConnectedAppsService {
  constructor(
    private readonly db: SqlRunner,
    private readonly revoked: RevokedGrantsService,
    private readonly audit: AuditService,
  ) {}

  /**
   * Per client: the scopes of its grants in force and of the consent; granted at the earliest of those grants'
   * start and the consent's last change; last used at the newest code or token issued under them (null when only
   * the consent is left). Most recently used first.
   */
  async list(userId: string): Promise<ConnectedAppView[]> {
    const [grants, consents] = await Promise.all([
      this.db.run<GrantRow>(LIVE_GRANTS, { userId, now: Date.now() }),
      this.db.run<ConsentRow>(CONSENTS, { userId }),
    ]);
    const apps = new Map<string, { name: string; scopes: Set<string>; grantedAt: number; lastUsedAt: number | null }>();
    const entry = (clientId: string, name: string, at: number) => {
      let app = apps.get(clientId);
      if (!app) apps.set(clientId, (app = { name, scopes: new Set(), grantedAt: at, lastUsedAt: null }));
      app.grantedAt = Math.min(app.grantedAt, at);
      return app;
    };
    for (const row of grants.rows) {
      const createdAt = epochMs(row.created_at);
      const app = entry(row.client_id, row.name, createdAt);
      for (const scope of row.scope.split(' ')) if (scope) app.scopes.add(scope);
      const lastUsed = Math.max(createdAt, epochMs(row.last_token_at, true) ?? 0);
      app.lastUsedAt = Math.max(app.lastUsedAt ?? 0, lastUsed);
    }
    for (const row of consents.rows) {
      const app = entry(row.client_id, row.name, epochMs(row.updated_at));
      for (const scope of row.scope.split(' ')) if (scope) app.scopes.add(scope);
    }
    return [...apps]
      .map(([clientId, app]) => ({
        clientId,
        name: app.name,
        scopes: [...app.scopes].sort().map((name) => ({ name, description: scopeDescription(name) })),
        grantedAt: app.grantedAt,
        lastUsedAt: app.lastUsedAt,
      }))
      .sort((a, b) => (b.lastUsedAt ?? 0) - (a.lastUsedAt ?? 0) || a.name.localeCompare(b.name) || a.clientId.localeCompare(b.clientId));
  }

  /**
   * Withdraws a client's access to this person's account, in one transaction: the consent (so no new
   * authorization skips the page), every grant of theirs for it not revoked yet (on the revoked list, so that their
   * access tokens stop on every instance; their refresh tokens deleted), and the `grant.revoked` event.
   * `not-connected` when the person had neither a consent nor such a grant with this client.
   */
  async revoke(userId: string, clientId: unknown, context: AuditContext): Promise<RevokeAppResult> {
    if (typeof clientId !== 'string' || !isClientId(clientId)) return 'malformed';
    const params = { userId, clientId };
    const [grants, consent] = await Promise.all([this.db.run<{ id: string }>(UNREVOKED_GRANTS, params), this.db.one(CONSENT, params)]);
    const ids = grants.rows.map((row) => row.id);
    if (ids.length === 0 && !consent) return 'not-connected';
    const now = Date.now();
    const details = { grants: ids.length, consent_withdrawn: Boolean(consent) };
    const event = AuditService.event({ type: 'grant.revoked', actor: `user:${userId}`, userId, clientId, details }, context, now);
    await this.db.atomic([
      { statement: DELETE_CONSENT, params },
      { statement: LIST_GRANTS_REVOKED, params: { ...params, now, expiresAt: this.revoked.expiryOf(now) } },
      { statement: REVOKE_GRANTS, params: { ...params, now } },
      { statement: DELETE_REFRESH_TOKENS, params },
      AuditService.writeOf(event),
    ]);
    this.revoked.applied(ids, now);
    this.audit.log(event);
    return 'revoked';
  }
}
