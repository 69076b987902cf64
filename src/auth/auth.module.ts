import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccessTokenService } from './access-token.service';
import { BearerAuthGuard } from './bearer-auth.guard';
import { Grant } from './entities/grant.entity';
import { RevokedGrant } from './entities/revoked-grant.entity';
import { SigningKey } from './entities/signing-key.entity';
import { JwksController } from './jwks.controller';
import { PasswordHasher } from './password-hasher';
import { RevocationService } from './revocation.service';
import { SigningKeysService } from './signing-keys.service';

/**
 * Signing keys, access tokens, revocation and the global bearer guard (deny by default). Global, because every
 * feature module relies on the guard and the principal it sets.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey, RevokedGrant, Grant])],
  controllers: [JwksController],
  providers: [
    SigningKeysService,
    RevocationService,
    AccessTokenService,
    PasswordHasher,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [SigningKeysService, RevocationService, AccessTokenService, PasswordHasher],
})
export class AuthModule {}
