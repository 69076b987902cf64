import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { RateLimitModule } from './common/rate-limit/rate-limit.module';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { UsersModule } from './users/users.module';

/** What the command line needs: configuration, the database and the services it drives; no HTTP server. */
@Module({ imports: [AppConfigModule, DatabaseModule, RateLimitModule, AuthModule, UsersModule] })
export class CliModule {}
