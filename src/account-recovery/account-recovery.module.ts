import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { MailModule } from '../mail/mail.module';
import { OAuthModule } from '../oauth';
import { UsersModule } from '../users/users.module';
import { AccountRecoveryRetention } from './account-recovery.retention';
import { PasswordResetController } from './password-reset.controller';
import { PasswordReset } from './password-reset.entity';
import { PasswordResetsRepository } from './password-resets.repository';
import { PasswordResetsService } from './password-resets.service';

/** Self-service for local accounts over e-mail: "forgot password" links. */
@Module({
  imports: [TypeOrmModule.forFeature([PasswordReset]), AuditModule, MailModule, OAuthModule, UsersModule],
  controllers: [PasswordResetController],
  providers: [PasswordResetsRepository, PasswordResetsService, AccountRecoveryRetention],
})
export class AccountRecoveryModule {}
