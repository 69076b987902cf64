import { Injectable } from '@nestjs/common';
import { ExpiringRows, type PruneStep, type PruneSteps } from '../retention/retention-step';
import { PasswordResetsRepository } from './password-resets.repository';

/** Reset links past their time, used or not. */
@ExpiringRows()
@Injectable()
export class AccountRecoveryRetention implements PruneSteps {
  constructor(private readonly resets: PasswordResetsRepository) {}

  pruneSteps(): PruneStep[] {
    return [{ table: 'password_resets', deleteBatch: (now, batch) => this.resets.deleteExpired(now, batch) }];
  }
}
