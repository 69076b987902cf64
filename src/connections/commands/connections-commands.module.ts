import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections.module';
import { ConnectionCreateCommand } from './connection-create.command';
import { ConnectionDeleteCommand } from './connection-delete.command';
import { ConnectionListCommand } from './connection-list.command';

/** The connections' commands; imported by the CLI only. */
@Module({ imports: [ConnectionsModule], providers: [ConnectionCreateCommand, ConnectionListCommand, ConnectionDeleteCommand] })
export class ConnectionsCommandsModule {}
