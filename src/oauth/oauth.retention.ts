import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { CLOCK_SKEW_SECONDS } from '../keys/keys.config';
import { ExpiringRows, type PruneStep, type PruneSteps } from '../retention/retention-step';
import { DeviceAuthorizationsRepository } from './device/device-authorizations.repository';
import { PushedRequestsRepository } from './par/pushed-requests.repository';
import { RetentionRepository } from './retention.repository';

/**
 * The authorization server's rows that nothing can use any more: codes never redeemed, ended grants with their codes
 * and refresh tokens, expired sessions, used client-assertion ids, and pushed and device authorization requests past
 * their lifetime. Consents go with their client or person (foreign keys).
 */
@ExpiringRows()
@Injectable()
export class OAuthRetention implements PruneSteps {
  constructor(
    private readonly rows: RetentionRepository,
    private readonly pushedRequests: PushedRequestsRepository,
    private readonly deviceRequests: DeviceAuthorizationsRepository,
    private readonly config: AppConfig,
  ) {}

  pruneSteps(): PruneStep[] {
    // A grant's rows stay until its last access token has expired too.
    const tokensLiveFor = (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000;
    return [
      ...this.rows.steps().map(({ table, cutoff, deleteBatch }) => ({
        table,
        deleteBatch: (now: number, batch: number) => deleteBatch(cutoff === 'grant' ? now - tokensLiveFor : now, batch),
      })),
      // Pushed authorization requests past their lifetime, used or not.
      { table: 'pushed_requests', deleteBatch: (now, batch) => this.pushedRequests.deleteExpired(now, batch) },
      // Device authorization requests past their lifetime, answered or not.
      { table: 'device_authorizations', deleteBatch: (now, batch) => this.deviceRequests.deleteExpired(now, batch) },
    ];
  }
}
