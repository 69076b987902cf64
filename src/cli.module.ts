import { Module } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { ScheduleModule } from '@nestjs/schedule';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { FEATURE_MODULES } from './features';
import { KeysCommandsModule } from './keys/commands/keys-commands.module';
import { MetricsModule } from './metrics/metrics.module';
import { MfaCommandsModule } from './mfa/commands/mfa-commands.module';
import { OAuthCommandsModule } from './oauth/clients/commands/oauth-commands.module';
import { UsersCommandsModule } from './users/commands/users-commands.module';
import { ConnectionsCommandsModule } from './connections/commands/connections-commands.module';

/**
 * The command line (`src/cli.ts`): configuration, the database, the feature modules (so that scopes and
 * configuration are the application's) and each feature's commands module; no HTTP server. A team's commands live
 * in its own folder (`<feature>/commands`) and get one import here.
 */
@Module({
  imports: [
    AppConfigModule,
    DatabaseModule,
    // The services the feature modules share report to it; the command line serves no metrics.
    MetricsModule,
    EventEmitterModule.forRoot(),
    // The shared services' refreshes (revoked list, signing keys) register with it; their timers do not delay a
    // command's exit and stop when it closes.
    ScheduleModule.forRoot(),
    RateLimitModule,
    ...FEATURE_MODULES,
    UsersCommandsModule,
    OAuthCommandsModule,
    KeysCommandsModule,
    MfaCommandsModule,
    ConnectionsCommandsModule,
  ],
})
export class CliModule {}
