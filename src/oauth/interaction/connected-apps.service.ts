import type { AuditContext } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { Injectable } from '@nestjs/common';
import { scopeDescription } from '../../auth/scopes';
import { RevokedGrantsService } from '../../auth/revoked-grants.service';
import { isClientId } from '../clients/client-metadata';
import { ConsentsRepository } from './consents.repository';
import { GrantsRepository } from '../grants/grants.repository';
import type { ConnectedAppView } from './pages';

export type RevokeAppResult = 'revoked' | 'not-connected' | 'malformed';

/**
 * The applications a person has let into their account — a grant in force or a recorded consent — and the
 * withdrawal of that access. Every query is scoped by the person as well as the client.
 */
@Injectable()
export class ConnectedAppsService {
  constructor(
    private readonly grants: GrantsRepository,
    private readonly consents: ConsentsRepository,
    private readonly revoked: RevokedGrantsService,
    private readonly audit: AuditService,
  ) {}

  /**
   * Per client: the scopes of its grants in force and of the consent; granted at the earliest of those grants'
   * start and the consent's last change; last used at the newest code or token issued under them (null when only
   * the consent is left). Most recently used first.
   */
  async list(userId: string): Promise<ConnectedAppView[]> {
    const [grants, consents] = await Promise.all([this.grants.liveOf(userId, Date.now()), this.consents.allOf(userId)]);
    const apps = new Map<string, { name: string; scopes: Set<string>; grantedAt: number; lastUsedAt: number | null }>();
    const entry = (clientId: string, name: string, at: number) => {
      let app = apps.get(clientId);
      if (!app) apps.set(clientId, (app = { name, scopes: new Set(), grantedAt: at, lastUsedAt: null }));
      app.grantedAt = Math.min(app.grantedAt, at);
      return app;
    };
    for (const grant of grants) {
      const app = entry(grant.clientId, grant.clientName, grant.createdAt);
      for (const scope of grant.scope.split(' ')) if (scope) app.scopes.add(scope);
      const lastUsed = Math.max(grant.createdAt, grant.lastTokenAt ?? 0);
      app.lastUsedAt = Math.max(app.lastUsedAt ?? 0, lastUsed);
    }
    for (const consent of consents) {
      const app = entry(consent.clientId, consent.clientName, consent.updatedAt);
      for (const scope of consent.scope.split(' ')) if (scope) app.scopes.add(scope);
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
    const [ids, consent] = await Promise.all([this.grants.unrevokedIds(userId, clientId), this.consents.scopeOf(userId, clientId)]);
    if (ids.length === 0 && consent === undefined) return 'not-connected';
    const now = Date.now();
    const details = { grants: ids.length, consent_withdrawn: consent !== undefined };
    const event = AuditService.event({ type: 'grant.revoked', actor: `user:${userId}`, userId, clientId, details }, context, now);
    // The grants read above: each marked, its refresh tokens deleted, and put on the revoked list.
    await this.grants.writeWith(
      [
        ConsentsRepository.deletionOf(userId, clientId),
        ...ids.flatMap((id) => [...GrantsRepository.revocationOf(id, now), this.revoked.revocationWrite(id, now)]),
      ],
      event,
    );
    this.revoked.applied(ids, now);
    this.audit.log(event);
    return 'revoked';
  }
}
