import { Module } from '@nestjs/common';
import { OAuthModule } from '../../oauth.module';
import { ClientCreateCommand } from './client-create.command';
import { ClientListCommand } from './client-list.command';
import { ClientUpdateCommand } from './client-update.command';

/** The authorization server's commands; imported by the CLI only. */
@Module({ imports: [OAuthModule], providers: [ClientCreateCommand, ClientListCommand, ClientUpdateCommand] })
export class OAuthCommandsModule {}
