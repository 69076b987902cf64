import { Injectable } from '@nestjs/common';
import { ExpiringRows, type PruneStep, type PruneSteps } from '../retention/retention-step';
import { PasskeysRepository } from './passkeys.repository';
import { SecondFactorsRepository } from './second-factors.repository';

/** Sign-in challenges that expired unanswered. */
@ExpiringRows()
@Injectable()
export class MfaRetention implements PruneSteps {
  constructor(
    private readonly factors: SecondFactorsRepository,
    private readonly passkeys: PasskeysRepository,
  ) {}

  pruneSteps(): PruneStep[] {
    return [
      // Sign-ins that waited for a second factor in vain.
      { table: 'login_challenges', deleteBatch: (now, batch) => this.factors.deleteExpiredChallenges(now, batch) },
      // Passkey challenges no browser answered.
      { table: 'webauthn_challenges', deleteBatch: (now, batch) => this.passkeys.deleteExpiredChallenges(now, batch) },
    ];
  }
}
