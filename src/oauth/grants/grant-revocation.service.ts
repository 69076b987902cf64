import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { AccessTokenVerifier } from '../../auth/access-token-verifier.service';
import type { AuditEvent } from '../../audit/audit-event.entity';
import type { AuditBy, AuditContext } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { RevokedGrantsService, clientTokensId, userTokensId } from '../../auth/revoked-grants.service';
import { BY_SYSTEM } from '../../audit/audit-events';
import { USER_DELETING, USER_PASSWORD_RESET, type UserDeletingEvent, type UserPasswordResetEvent } from '../../users/user-events';
import type { Client } from '../entities/client.entity';
import { GrantsRepository } from './grants.repository';
import { RefreshTokensRepository } from './refresh-tokens.repository';
import { clientCredentialsGrantId } from './client-credentials-grant.service';
import { hashSecret } from '../../crypto/secrets';
import { SIGN_IN_FACTOR_REMOVED, type SignInFactorRemovedEvent } from '../../mfa/factor-events';

/**
 * The life of a grant (one code and the refresh tokens rotated from it): whether it is still live, and its
 * revocation — on code replay, refresh-token reuse, RFC 7009 revocation and the deletion of its user.
 */
@Injectable()
export class GrantRevocationService {
  constructor(
    private readonly grants: GrantsRepository,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly accessTokens: AccessTokenVerifier,
    private readonly revoked: RevokedGrantsService,
    private readonly audit: AuditService,
  ) {}

  async isLive(grantId: string, now: number): Promise<boolean> {
    return this.grants.isLive(grantId, now);
  }

  /**
   * Revokes a grant: its refresh tokens stop working at once, its access tokens within REVOCATION_SYNC_SECONDS.
   * `event` (code replayed, refresh token reused, token or grant revoked) is recorded in the same transaction.
   */
  async revokeGrant(grantId: string, event: AuditEvent): Promise<void> {
    const now = event.at;
    await this.grants.writeWith([...GrantsRepository.revocationOf(grantId, now), this.revoked.revocationWrite(grantId, now)], event);
    this.revoked.applied([grantId], now);
    this.audit.log(event);
  }

  /** RFC 7009: revokes the grant of a refresh or access token of this client; anything else is ignored. */
  async revokeToken(client: Client, token: string, context: AuditContext): Promise<void> {
    const revoked = (userId: string | null) =>
      AuditService.event({ type: 'token.revoked', actor: `client:${client.id}`, userId, clientId: client.id }, context);
    const refresh = await this.refreshTokens.findStored(hashSecret(token));
    if (refresh) {
      if (refresh.clientId === client.id) await this.revokeGrant(refresh.grantId, revoked(refresh.userId));
      return;
    }
    const access = await this.accessTokens.verifySignatureAndClaims(token, { anyAudience: true }).catch(() => undefined);
    if (access && access.clientId === client.id) {
      await this.revokeGrant(access.grantId, revoked(access.kind === 'user' ? access.sub : null));
    }
  }

  /**
   * Before a client is deleted (which deletes its grants): every access token issued to it until now — of its
   * grants, for itself (client credentials), by token exchange — and every token exchanged from its grants, as
   * one entry of the revoked list however many grants it had.
   */
  async revokeClientGrants(clientId: string): Promise<void> {
    await this.revoked.revoke([clientTokensId(clientId)]);
  }

  /** The client-credentials tokens a client obtained until now (e.g. when its secret is replaced). */
  async revokeClientCredentialsTokens(clientId: string): Promise<void> {
    await this.revoked.revoke([clientCredentialsGrantId(clientId)]);
  }

  /**
   * After a person's password or email was replaced (an operator's reset, or the person or an administrator
   * through the API): every grant of theirs revoked, as {@link revokeGrant} does one (refresh tokens dead at once,
   * access tokens within REVOCATION_SYNC_SECONDS), but the grant that made the change with the person's own proof,
   * in one transaction with one `grant.revoked` event. Grant by grant rather than the person's whole-subject entry,
   * which also refuses the tokens of the next 30 s (it is made for a deletion): the person signs in again at once.
   */
  @OnEvent(USER_PASSWORD_RESET, { promisify: true, suppressErrors: false })
  async onPasswordReset(event: UserPasswordResetEvent): Promise<void> {
    const { change } = event;
    await this.revokeEveryGrantOf(event.userId, change?.by ?? BY_SYSTEM, change?.via ?? 'password reset', true, change?.keepGrantId);
  }

  /** After a sign-in factor of the person was removed: every grant of theirs, as at a password reset (audited when any). */
  @OnEvent(SIGN_IN_FACTOR_REMOVED, { promisify: true, suppressErrors: false })
  async onFactorRemoved(event: SignInFactorRemovedEvent): Promise<void> {
    await this.revokeEveryGrantOf(event.userId, event.by, 'factor removed', false);
  }

  /**
   * Every unrevoked grant of the person but `keep`, with one `grant.revoked` event (`evenIfNone`: also when there
   * were none).
   */
  private async revokeEveryGrantOf(userId: string, by: AuditBy, via: string, evenIfNone: boolean, keep?: string): Promise<void> {
    const now = Date.now();
    const ids = (await this.grants.unrevokedIdsOf(userId)).filter((id) => id !== keep);
    if (ids.length === 0 && !evenIfNone) return;
    const details = { via, every: true, ...(keep ? { kept: keep } : {}) };
    const revoked = AuditService.event({ type: 'grant.revoked', actor: by.actor, userId, details }, by.context, now);
    const writes = ids.flatMap((id) => [...GrantsRepository.revocationOf(id, now), this.revoked.revocationWrite(id, now)]);
    await this.grants.writeWith(writes, revoked);
    this.revoked.applied(ids, now);
    this.audit.log(revoked);
  }

  /** Before a user is deleted (which deletes its grants): every access token of theirs until now, as one entry. */
  @OnEvent(USER_DELETING, { promisify: true, suppressErrors: false })
  async onUserDeleting(event: UserDeletingEvent): Promise<void> {
    await this.revoked.revoke([userTokensId(event.userId)]);
  }
}
