import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AuthConfig } from '../auth/auth.config';
import { AuthModule } from '../auth/auth.module';
import { AppConfigModule } from '../config/config.module';
import { RetentionRepository } from './retention.repository';
import { OAuthRetention } from './oauth.retention';
import { KeysModule } from '../keys/keys.module';
import { MfaModule } from '../mfa/mfa.module';
import { SigningKeysService } from '../keys/signing-keys.service';
import { UsersModule } from '../users/users.module';
import { AuthorizationRequestValidator } from './endpoints/authorize/authorization-request';
import { AuthorizeController } from './endpoints/authorize/authorize.controller';
import { AuthorizeAnswers } from './endpoints/authorize/authorize-answers';
import { ClientAssertionVerifier } from './client-auth/client-assertion';
import { ClientAuthGuard } from './client-auth/client-auth.guard';
import { ClientAuthenticator } from './client-auth/client-authenticator';
import { ClientKeys } from './client-auth/client-keys';
import { ClientsRepository } from './clients/clients.repository';
import { ClientsService } from './clients/clients.service';
import { CodesRepository } from './grants/codes.repository';
import { CodeGrantService } from './grants/code-grant.service';
import { ConsentsRepository } from './interaction/consents.repository';
import { ConsentService } from './interaction/consent.service';
import { ConnectedAppsController } from './interaction/connected-apps.controller';
import { AssetsController } from './interaction/assets.controller';
import { PushedAuthorizationController } from './endpoints/par.controller';
import { PushedRequestsService } from './par/pushed-requests.service';
import { PushedRequestsRepository } from './par/pushed-requests.repository';
import { AccountSecurityController } from './interaction/account-security.controller';
import { AccountPasskeysController } from './interaction/account-passkeys.controller';
import { AccountSecurityPage } from './interaction/account-security-page';
import { GrantsRepository } from './grants/grants.repository';
import { ConnectedAppsService } from './interaction/connected-apps.service';
import { AuthorizationCode } from './entities/authorization-code.entity';
import { ClientAssertionJti } from './entities/client-assertion-jti.entity';
import { Client } from './entities/client.entity';
import { Consent } from './entities/consent.entity';
import { DeviceAuthorization } from './entities/device-authorization.entity';
import { Grant } from './entities/grant.entity';
import { PushedRequest } from './entities/pushed-request.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { Session } from './entities/session.entity';
import { GrantRevocationService } from './grants/grant-revocation.service';
import { IntrospectionController } from './endpoints/introspection/introspection.controller';
import { IntrospectionService } from './endpoints/introspection/introspection.service';
import { LoginController } from './interaction/login.controller';
import { AccountHomeController } from './interaction/account-home.controller';
import { SecondFactorController } from './interaction/second-factor.controller';
import { PasskeyLoginController } from './interaction/passkey-login.controller';
import { StepUpController } from './interaction/step-up.controller';
import { SignInSteps } from './interaction/sign-in-steps';
import { EndSessionController } from './endpoints/end-session/end-session.controller';
import { EndSessionService } from './endpoints/end-session/end-session.service';
import { IdTokenHints } from './oidc/id-token-hints';
import { MetadataController } from './endpoints/metadata.controller';
import { JwksController } from './endpoints/jwks.controller';
import { OAuthConfig } from './oauth.config';
import { oauthPagesProvider } from './interaction/custom-pages.module';
import { OAuthPages } from './interaction/pages';
import { RefreshGrantService } from './grants/refresh-grant.service';
import { LostAnswers } from './grants/lost-answers';
import { RevocationController } from './endpoints/revocation.controller';
import { SessionsRepository } from './interaction/sessions.repository';
import { SessionsService } from './interaction/sessions.service';
import { FactorChangeRules } from './interaction/factor-change-rules';
import { TokenController } from './endpoints/token.controller';
import { RegistrationController } from './clients/registration/registration.controller';
import { AdminClientsController } from './clients/admin-clients.controller';
import { RegistrationConfig } from './clients/registration/registration.config';
import { RegistrationService } from './clients/registration/registration.service';
import { ResourceIndicators } from './resource-indicators';
import { RemoteJsonFetcher, SafeRemoteJson } from './remote-json';
import { ClientCredentialsGrantService } from './grants/client-credentials-grant.service';
import { RefreshTokensRepository } from './grants/refresh-tokens.repository';
import { TokenIssuer } from './grants/token-issuer.service';
import { signingKeyProvider } from './grants/token-signing';
import { IdTokenIssuer } from './oidc/id-tokens';
import { TokenExchangeGrantService } from './grants/token-exchange-grant.service';
import { UserInfoController } from './endpoints/userinfo/userinfo.controller';
import { UserInfoService } from './endpoints/userinfo/userinfo.service';
import { SafeFetchModule } from '../safe-fetch/safe-fetch.module';
import { ClientMetadataConfig } from './clients/cimd/client-metadata.config';
import { DeviceAuthorizationController } from './endpoints/device-authorization.controller';
import { DeviceController } from './interaction/device.controller';
import { DeviceAuthorizationService } from './device/device-authorization.service';
import { DeviceAuthorizationsRepository } from './device/device-authorizations.repository';
import { ClientMetadataDocuments } from './clients/cimd/client-metadata.service';

const oauthConfig = AppConfigModule.forFeature(OAuthConfig);

/**
 * The authorization server: clients, login sessions, consent, the connected-apps page, the authorization-code and
 * refresh-token grants, revocation, introspection, metadata and OpenID Connect (ID tokens, UserInfo, discovery). It
 * signs with the keys module's active key and revokes through the auth module's revoked-grants list; it reads users
 * through `UsersService` and learns of a user's deletion by the `user.deleting` event.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([
      Client,
      Session,
      AuthorizationCode,
      Grant,
      RefreshToken,
      Consent,
      ClientAssertionJti,
      PushedRequest,
      DeviceAuthorization,
    ]),
    oauthConfig,
    AppConfigModule.forFeature(RegistrationConfig),
    AppConfigModule.forFeature(ClientMetadataConfig),
    // REVOCATION_SYNC_SECONDS: how long an instance keeps a client it has read (see ClientsService).
    AppConfigModule.forFeature(AuthConfig),
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
    MfaModule,
  ],
  // Express tries routes in the order they are registered: the code flow's two endpoints first.
  controllers: [
    AuthorizeController,
    TokenController,
    MetadataController,
    JwksController,
    LoginController,
    AccountHomeController,
    SecondFactorController,
    PasskeyLoginController,
    StepUpController,
    EndSessionController,
    ConnectedAppsController,
    AccountSecurityController,
    AccountPasskeysController,
    AssetsController,
    PushedAuthorizationController,
    DeviceAuthorizationController,
    DeviceController,
    RevocationController,
    IntrospectionController,
    RegistrationController,
    AdminClientsController,
    UserInfoController,
  ],
  providers: [
    AccountSecurityPage,
    AuthorizeAnswers,
    SignInSteps,
    EndSessionService,
    IdTokenHints,
    ClientsService,
    ClientsRepository,
    ClientAuthGuard,
    ClientAuthenticator,
    ClientAssertionVerifier,
    ClientKeys,
    // Clients' jwks_uri: fetched by the SafeFetcher under the client-document host policy.
    { provide: RemoteJsonFetcher, useClass: SafeRemoteJson },
    SessionsService,
    SessionsRepository,
    FactorChangeRules,
    ConsentService,
    ConsentsRepository,
    ConnectedAppsService,
    GrantsRepository,
    AuthorizationRequestValidator,
    PushedRequestsService,
    DeviceAuthorizationService,
    DeviceAuthorizationsRepository,
    PushedRequestsRepository,
    ResourceIndicators,
    TokenIssuer,
    IdTokenIssuer,
    RefreshTokensRepository,
    CodeGrantService,
    CodesRepository,
    RefreshGrantService,
    LostAnswers,
    ClientCredentialsGrantService,
    TokenExchangeGrantService,
    GrantRevocationService,
    IntrospectionService,
    RegistrationService,
    UserInfoService,
    ClientMetadataDocuments,
    OAuthRetention,
    RetentionRepository,
    oauthPagesProvider,
  ],
  exports: [oauthConfig, ClientsService, TokenIssuer, OAuthPages, SignInSteps],
})
export class OAuthModule {}
