import { Module } from '@nestjs/common';
import { UsersModule } from '../users.module';
import { UserCreateCommand } from './user-create.command';
import { UserListCommand } from './user-list.command';
import { UserSetPasswordCommand } from './user-set-password.command';

/** The users module's commands; imported by the CLI only, never by the HTTP application. */
@Module({ imports: [UsersModule], providers: [UserCreateCommand, UserListCommand, UserSetPasswordCommand] })
export class UsersCommandsModule {}
