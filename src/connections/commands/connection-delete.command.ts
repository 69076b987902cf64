import { Command, CommandRunner } from 'nest-commander';
import { BY_SYSTEM } from '../../audit/audit-events';
import { CommandInputError, printJson } from '../../common/command-line';
import { isUuid } from '../../common/validation';
import { ConnectionsService } from '../connections.service';

/** `connection:delete <id>`: what `DELETE /admin/connections/{id}` does (its identities go; their people stay). */
@Command({ name: 'connection:delete', arguments: '<id>', description: 'delete a company sign-in connection' })
export class ConnectionDeleteCommand extends CommandRunner {
  constructor(private readonly connections: ConnectionsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    if (!isUuid(id)) throw new CommandInputError(`no connection with id "${id}"`);
    await this.connections.delete(id, BY_SYSTEM);
    printJson({ deleted: id });
  }
}
