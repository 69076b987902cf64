import { Command, CommandRunner } from 'nest-commander';
import { BY_SYSTEM } from '../../audit/audit-events';
import { CommandInputError, printJson } from '../../common/command-line';
import { ConnectionsService } from '../connections.service';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `connection:delete <id>`: what `DELETE /admin/connections/{id}` does (its identities go; their people stay). */
@Command({ name: 'connection:delete', arguments: '<id>', description: 'delete a company sign-in connection' })
export class ConnectionDeleteCommand extends CommandRunner {
  constructor(private readonly connections: ConnectionsService) {
    super();
  }

  async run([id]: string[]): Promise<void> {
    if (!UUID.test(id)) throw new CommandInputError(`no connection with id "${id}"`);
    await this.connections.delete(id, BY_SYSTEM);
    printJson({ deleted: id });
  }
}
