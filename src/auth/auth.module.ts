import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsersModule } from '../users/users.module';
import { AccessTokenService } from './access-token.service';
import { AuthorizationRequestValidator } from './authorization-request';
import { AuthorizeController } from './authorize.controller';
import { BearerAuthGuard } from './bearer-auth.guard';
import { ClientsService } from './clients.service';
import { AuthorizationCode } from './entities/authorization-code.entity';
import { Client } from './entities/client.entity';
import { Consent } from './entities/consent.entity';
import { Grant } from './entities/grant.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { RevokedGrant } from './entities/revoked-grant.entity';
import { Session } from './entities/session.entity';
import { SigningKey } from './entities/signing-key.entity';
import { GrantsService } from './grants.service';
import { JwksController } from './jwks.controller';
import { LoginController } from './login.controller';
import { MetadataController } from './metadata.controller';
import { PasswordHasher } from './password-hasher';
import { RevocationService } from './revocation.service';
import { SessionsService } from './sessions.service';
import { SigningKeysService } from './signing-keys.service';
import { TokenController } from './token.controller';

/**
 * The authorization server (clients, login sessions, codes, tokens, consent) and the resource server's side of
 * it: signing keys, access-token verification, revocation and the global bearer guard (deny by default).
 * Global, because every feature module relies on the guard and the principal it sets.
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forFeature([SigningKey, RevokedGrant, Grant, Client, Session, AuthorizationCode, RefreshToken, Consent]),
    UsersModule,
  ],
  controllers: [JwksController, MetadataController, AuthorizeController, LoginController, TokenController],
  providers: [
    SigningKeysService,
    RevocationService,
    AccessTokenService,
    PasswordHasher,
    ClientsService,
    SessionsService,
    GrantsService,
    AuthorizationRequestValidator,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [SigningKeysService, RevocationService, AccessTokenService, PasswordHasher, ClientsService, GrantsService],
})
export class AuthModule {}
