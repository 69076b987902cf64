import { Injectable } from '@nestjs/common';
import { ExpiringRows, type PruneStep, type PruneSteps } from '../retention/retention-step';
import { ConnectionsRepository } from './connections.repository';

/** Sign-ins sent to a connection that never came back. */
@ExpiringRows()
@Injectable()
export class ConnectionsRetention implements PruneSteps {
  constructor(private readonly connections: ConnectionsRepository) {}

  pruneSteps(): PruneStep[] {
    return [{ table: 'connection_logins', deleteBatch: (now, batch) => this.connections.deleteExpiredLogins(now, batch) }];
  }
}
