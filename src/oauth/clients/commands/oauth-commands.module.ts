import { Module } from '@nestjs/common';
import { OAuthModule } from '../../oauth.module';
import { ClientCreateCommand } from './client-create.command';
import { ClientUpdateCommand } from './client-update.command';

/** The authorization server's commands; imported by the CLI only. */
@Module({ imports: [OAuthModule], providers: [ClientCreateCommand, ClientUpdateCommand] })
export class OAuthCommandsModule {}
