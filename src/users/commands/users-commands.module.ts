import { Module } from '@nestjs/common';
import { UsersModule } from '../users.module';
import { UserCreateCommand } from './user-create.command';

/** The users module's commands; imported by the CLI only, never by the HTTP application. */
@Module({ imports: [UsersModule], providers: [UserCreateCommand] })
export class UsersCommandsModule {}
