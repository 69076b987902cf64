import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { AccessTokenVerifier } from '../auth/access-token-verifier.service';
import { RevokedGrantsService } from '../auth/revoked-grants.service';
import { USER_DELETING, type UserDeletingEvent } from '../users/user-events';
import type { Client } from './entities/client.entity';
import { Grant } from './entities/grant.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { clientCredentialsGrantId } from './client-credentials-grant.service';
import { hashSecret } from './secrets';

/**
 * The life of a grant (one code and the refresh tokens rotated from it): whether it is still live, and its
 * revocation — on code replay, refresh-token reuse, RFC 7009 revocation and the deletion of its user.
 */
@Injectable()
export class GrantRevocationService {
  constructor(
    @InjectRepository(Grant) private readonly grants: Repository<Grant>,
    @InjectRepository(RefreshToken) private readonly refreshTokens: Repository<RefreshToken>,
    private readonly accessTokens: AccessTokenVerifier,
    private readonly revoked: RevokedGrantsService,
  ) {}

  async isLive(grantId: string, now: number): Promise<boolean> {
    const grant = await this.grants.findOne({ where: { id: grantId }, select: { id: true, revokedAt: true, expiresAt: true } });
    return Boolean(grant && grant.revokedAt === null && grant.expiresAt > now);
  }

  /** Revokes a grant: its refresh tokens stop working at once, its access tokens within REVOCATION_SYNC_SECONDS. */
  async revokeGrant(grantId: string): Promise<void> {
    const now = Date.now();
    await this.grants.update({ id: grantId, revokedAt: IsNull() }, { revokedAt: now });
    await this.revoked.revoke([grantId]);
    await this.refreshTokens.delete({ grantId, rotatedAt: IsNull() });
  }

  /** RFC 7009: revokes the grant of a refresh or access token of this client; anything else is ignored. */
  async revokeToken(client: Client, token: string): Promise<void> {
    const refresh = await this.refreshTokens.findOne({ where: { tokenHash: hashSecret(token) } });
    if (refresh) {
      if (refresh.clientId === client.id) await this.revokeGrant(refresh.grantId);
      return;
    }
    const access = await this.accessTokens.verifySignatureAndClaims(token, { anyAudience: true }).catch(() => undefined);
    if (access && access.clientId === client.id) await this.revokeGrant(access.grantId);
  }

  /**
   * Before a client is deleted (which deletes its grants): the access tokens of its grants and those it obtained
   * for itself (client credentials) are put on the revoked list.
   */
  async revokeClientGrants(clientId: string): Promise<void> {
    const rows = await this.grants.find({ where: { clientId }, select: { id: true } });
    await this.revoked.revoke([...rows.map((row) => row.id), clientCredentialsGrantId(clientId)]);
  }

  /** The client-credentials tokens a client obtained until now (e.g. when its secret is replaced). */
  async revokeClientCredentialsTokens(clientId: string): Promise<void> {
    await this.revoked.revoke([clientCredentialsGrantId(clientId)]);
  }

  /** Before a user is deleted (which deletes its grants), its access tokens are put on the revoked list. */
  @OnEvent(USER_DELETING, { promisify: true, suppressErrors: false })
  async onUserDeleting(event: UserDeletingEvent): Promise<void> {
    const rows = await this.grants.find({ where: { userId: event.userId }, select: { id: true } });
    await this.revoked.revoke(rows.map((row) => row.id));
  }
}
