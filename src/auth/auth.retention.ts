import { Injectable } from '@nestjs/common';
import { ExpiringRows, type PruneStep, type PruneSteps } from '../retention/retention-step';
import { DpopProofsRepository } from './dpop-proofs.repository';
import { RevokedGrantsRepository } from './revoked-grants.repository';

/** The resource server's rows that nothing can use any more. */
@ExpiringRows()
@Injectable()
export class AuthRetention implements PruneSteps {
  constructor(
    private readonly dpopProofs: DpopProofsRepository,
    private readonly revoked: RevokedGrantsRepository,
  ) {}

  pruneSteps(): PruneStep[] {
    return [
      // Used DPoP proofs too old to be accepted again anyway.
      { table: 'dpop_proofs', deleteBatch: (now, batch) => this.dpopProofs.deleteExpired(now, batch) },
      // Revoked-list entries past the life of every token they cover.
      { table: 'revoked_grants', deleteBatch: (now, batch) => this.revoked.deleteExpired(now, batch) },
    ];
  }
}
