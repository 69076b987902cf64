import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { AppConfigModule } from '../config/config.module';
import { SqlRunner } from '../database/sql';
import { KeysConfig } from '../keys/keys.config';
import { MfaConfig } from './mfa.config';
import { MfaKeysRepository } from './mfa-keys.repository';
import { MfaRetention } from './mfa.retention';
import { PasskeysRepository } from './passkeys.repository';
import { PasskeysService } from './passkeys.service';
import { RecoveryCodeKey } from './recovery-code-key';
import { SecondFactorsRepository } from './second-factors.repository';
import { SecondFactorsService } from './second-factors.service';
import { SignInFactorsService } from './sign-in-factors.service';
import { UserFactorsController } from './user-factors.controller';
import { UsersModule } from '../users/users.module';

/**
 * Second factors of sign-in (TOTP authenticators and recovery codes) and passkeys. The login and account pages of the
 * authorization server use {@link SecondFactorsService}; nothing here knows HTTP.
 */
@Module({
  imports: [AppConfigModule.forFeature(KeysConfig), AppConfigModule.forFeature(MfaConfig), AuditModule, UsersModule],
  controllers: [UserFactorsController],
  providers: [
    SecondFactorsRepository,
    SecondFactorsService,
    MfaKeysRepository,
    RecoveryCodeKey,
    PasskeysRepository,
    PasskeysService,
    SignInFactorsService,
    MfaRetention,
    SqlRunner,
  ],
  exports: [SecondFactorsService, PasskeysService, SignInFactorsService],
})
export class MfaModule {}
