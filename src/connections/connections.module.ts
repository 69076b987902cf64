import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AppConfigModule } from '../config/config.module';
import { KeysConfig } from '../keys/keys.config';
import { MfaModule } from '../mfa/mfa.module';
import { OAuthModule, SIGN_IN_CONNECTIONS } from '../oauth';
import { UsersModule } from '../users/users.module';
import { AdminConnectionsController } from './admin-connections.controller';
import { ConnectionLogin } from './connection-login.entity';
import { ConnectionLoginController } from './connection-login.controller';
import { Connection } from './connection.entity';
import { ConnectionsRepository } from './connections.repository';
import { ConnectionsRetention } from './connections.retention';
import { ConnectionsService } from './connections.service';
import { FederatedPeople } from './federated-people';
import { Identity } from './identity.entity';
import { OidcUpstream } from './oidc-upstream';
import { ConnectionSignInRoutes } from './sign-in-routes';

/** Company sign-in: connections to the company's identity providers, managed by administrators. */
@Module({
  imports: [
    TypeOrmModule.forFeature([Connection, Identity, ConnectionLogin]),
    AppConfigModule.forFeature(KeysConfig),
    AuditModule,
    MfaModule,
    OAuthModule,
    UsersModule,
  ],
  controllers: [AdminConnectionsController, ConnectionLoginController],
  providers: [
    ConnectionsRepository,
    ConnectionsService,
    OidcUpstream,
    FederatedPeople,
    ConnectionsRetention,
    ConnectionSignInRoutes,
    { provide: SIGN_IN_CONNECTIONS, useExisting: ConnectionSignInRoutes },
  ],
  exports: [ConnectionsService],
})
export class ConnectionsModule {}
