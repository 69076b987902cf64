import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/command-line';
import { ConnectionsService } from '../connections.service';

/** `connection:list`: every connection as the admin API lists them (never a client secret). */
@Command({ name: 'connection:list', description: 'list the company sign-in connections as JSON' })
export class ConnectionListCommand extends CommandRunner {
  constructor(private readonly connections: ConnectionsService) {
    super();
  }

  async run(): Promise<void> {
    printJson(await this.connections.list());
  }
}
