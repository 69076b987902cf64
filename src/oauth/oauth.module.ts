import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AuthModule } from '../auth/auth.module';
import { AppConfigModule } from '../config/config.module';
import { SqlRunner } from '../database/sql';
import { RetentionRepository } from './retention.repository';
import { RetentionService } from './retention.service';
import { KeysModule } from '../keys/keys.module';
import { SigningKeysService } from '../keys/signing-keys.service';
import { UsersModule } from '../users/users.module';
import { AuthorizationRequestValidator } from './authorization-request';
import { AuthorizeController } from './authorize.controller';
import { ClientAssertionVerifier } from './client-assertion';
import { ClientAuthGuard } from './client-auth.guard';
import { ClientKeys } from './client-keys';
import { ClientsRepository } from './clients.repository';
import { ClientsService } from './clients.service';
import { CodesRepository } from './codes.repository';
import { CodeGrantService } from './code-grant.service';
import { ConsentsRepository } from './consents.repository';
import { ConsentService } from './consent.service';
import { ConnectedAppsController } from './connected-apps.controller';
import { GrantsRepository } from './grants.repository';
import { ConnectedAppsService } from './connected-apps.service';
import { AuthorizationCode } from './entities/authorization-code.entity';
import { Client } from './entities/client.entity';
import { Consent } from './entities/consent.entity';
import { Grant } from './entities/grant.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { Session } from './entities/session.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { IntrospectionController } from './introspection.controller';
import { IntrospectionService } from './introspection.service';
import { LoginController } from './login.controller';
import { EndSessionController } from './end-session.controller';
import { EndSessionService } from './end-session.service';
import { IdTokenHints } from './id-token-hints';
import { MetadataController } from './metadata.controller';
import { JwksController } from './jwks.controller';
import { OAuthConfig } from './oauth.config';
import { oauthPagesProvider } from './custom-pages.module';
import { OAuthPages } from './pages';
import { RefreshGrantService } from './refresh-grant.service';
import { RevocationController } from './revocation.controller';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';
import { TokenController } from './token.controller';
import { RegistrationController } from './registration.controller';
import { AdminClientsController } from './admin-clients.controller';
import { RegistrationConfig } from './registration.config';
import { RegistrationService } from './registration.service';
import { ResourceIndicators } from './resource-indicators';
import { RemoteJsonFetcher, SafeRemoteJson } from './remote-json';
import { ClientCredentialsGrantService } from './client-credentials-grant.service';
import { RefreshTokensRepository } from './refresh-tokens.repository';
import { TokenIssuer, signingKeyProvider } from './token-issuer.service';
import { TokenExchangeGrantService } from './token-exchange-grant.service';
import { UserInfoController } from './userinfo.controller';
import { UserInfoService } from './userinfo.service';
import { SafeFetchModule } from '../common/safe-fetch/safe-fetch.module';
import { ClientMetadataConfig } from './cimd/client-metadata.config';
import { ClientMetadataDocuments } from './cimd/client-metadata.service';

const oauthConfig = AppConfigModule.forFeature(OAuthConfig);

/**
 * The authorization server: clients, login sessions, consent, the connected-apps page, the authorization-code and
 * refresh-token grants, revocation, introspection, metadata and OpenID Connect (ID tokens, UserInfo, discovery). It
 * signs with the keys module's active key and revokes through the auth module's revoked-grants list; it reads users
 * through `UsersService` and learns of a user's deletion by the `user.deleting` event.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([Client, Session, AuthorizationCode, Grant, RefreshToken, Consent]),
    oauthConfig,
    AppConfigModule.forFeature(RegistrationConfig),
    AppConfigModule.forFeature(ClientMetadataConfig),
    SafeFetchModule,
    // The signer's key comes from the keys module, by the kid in the token's header (see signingKeyProvider).
    JwtModule.registerAsync({
      imports: [KeysModule],
      inject: [SigningKeysService],
      useFactory: (keys: SigningKeysService) => ({ secretOrKeyProvider: signingKeyProvider(keys) }),
    }),
    AuthModule,
    AuditModule,
    KeysModule,
    UsersModule,
  ],
  controllers: [
    MetadataController,
    JwksController,
    AuthorizeController,
    LoginController,
    EndSessionController,
    ConnectedAppsController,
    TokenController,
    RevocationController,
    IntrospectionController,
    RegistrationController,
    AdminClientsController,
    UserInfoController,
  ],
  providers: [
    EndSessionService,
    IdTokenHints,
    SqlRunner,
    ClientsService,
    ClientsRepository,
    ClientAuthGuard,
    ClientAssertionVerifier,
    ClientKeys,
    // Clients' jwks_uri: fetched by the SafeFetcher under the client-document host policy.
    { provide: RemoteJsonFetcher, useClass: SafeRemoteJson },
    SessionsService,
    SessionsRepository,
    ConsentService,
    ConsentsRepository,
    ConnectedAppsService,
    GrantsRepository,
    AuthorizationRequestValidator,
    ResourceIndicators,
    TokenIssuer,
    RefreshTokensRepository,
    CodeGrantService,
    CodesRepository,
    RefreshGrantService,
    ClientCredentialsGrantService,
    TokenExchangeGrantService,
    GrantRevocationService,
    IntrospectionService,
    RegistrationService,
    UserInfoService,
    ClientMetadataDocuments,
    RetentionService,
    RetentionRepository,
    oauthPagesProvider,
  ],
  exports: [oauthConfig, ClientsService, TokenIssuer, OAuthPages],
})
export class OAuthModule {}
