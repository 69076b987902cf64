import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AppConfigModule } from '../config/config.module';
import { KeysConfig } from '../keys/keys.config';
import { LoginChallenge } from './login-challenge.entity';
import { MfaConfig } from './mfa.config';
import { MfaKey } from './mfa-key.entity';
import { MfaKeysRepository } from './mfa-keys.repository';
import { MfaRetention } from './mfa.retention';
import { Passkey } from './passkey.entity';
import { PasskeysRepository } from './passkeys.repository';
import { PasskeysService } from './passkeys.service';
import { RecoveryCode } from './recovery-code.entity';
import { RecoveryCodeKey } from './recovery-code-key';
import { SecondFactorsRepository } from './second-factors.repository';
import { SecondFactorsService } from './second-factors.service';
import { SignInFactorsService } from './sign-in-factors.service';
import { TotpFactor } from './totp-factor.entity';
import { UserFactorsController } from './user-factors.controller';
import { WebauthnChallenge } from './webauthn-challenge.entity';
import { UsersModule } from '../users/users.module';

/**
 * Second factors of sign-in (TOTP authenticators and recovery codes) and passkeys. The login and account pages of the
 * authorization server use {@link SecondFactorsService}; nothing here knows HTTP.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([TotpFactor, RecoveryCode, LoginChallenge, Passkey, WebauthnChallenge, MfaKey]),
    AppConfigModule.forFeature(KeysConfig),
    AppConfigModule.forFeature(MfaConfig),
    AuditModule,
    UsersModule,
  ],
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
  ],
  exports: [SecondFactorsService, PasskeysService, SignInFactorsService],
})
export class MfaModule {}
