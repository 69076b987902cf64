import { Module } from '@nestjs/common';
import { UsersModule } from '../../users/users.module';
import { MfaModule } from '../mfa.module';
import { UserResetFactorsCommand } from './user-reset-factors.command';

/** The second-factor module's commands; imported by the CLI only. */
@Module({ imports: [MfaModule, UsersModule], providers: [UserResetFactorsCommand] })
export class MfaCommandsModule {}
