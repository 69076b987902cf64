import { Module } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { ScheduleModule } from '@nestjs/schedule';
import { AccountRecoveryModule } from './account-recovery/account-recovery.module';
import { AuditModule } from './audit/audit.module';
import { ConnectionsModule } from './connections/connections.module';
import { AuthModule } from './auth/auth.module';
import { CommonModule } from './common/common.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { RegisteredFeaturesCheck } from './database/registered-features.check';
import { DemoModule } from './demo/demo.module';
import { FEATURE_MODULES } from './features';
import { HealthModule } from './health/health.module';
import { KeyRotationModule } from './keys/key-rotation.module';
import { KeysModule } from './keys/keys.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { OAuthModule } from './oauth/oauth.module';
import { RetentionModule } from './retention/retention.module';

@Module({
  imports: [
    AppConfigModule,
    LoggingModule,
    DatabaseModule,
    MetricsModule,
    EventEmitterModule.forRoot(),
    // The periodic jobs (retention, the revoked-list sync, the signing keys' refresh and rotation check).
    ScheduleModule.forRoot(),
    CommonModule,
    RateLimitModule,
    KeysModule,
    KeyRotationModule,
    AuthModule,
    AuditModule,
    // The resource API's routes before the authorization server's: Express tries routes in the order they are
    // registered, and every API call would otherwise walk past some sixty OAuth routes first.
    ...FEATURE_MODULES,
    OAuthModule,
    AccountRecoveryModule,
    ConnectionsModule,
    RetentionModule,
    HealthModule,
    DemoModule,
  ],
  // The service refuses to start with a feature whose migrations run but whose module is left out.
  providers: [RegisteredFeaturesCheck],
})
export class AppModule {}
