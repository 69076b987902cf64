import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { CommonModule } from './common/common.module';
import { RateLimitModule } from './common/rate-limit/rate-limit.module';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { DemoModule } from './demo/demo.module';
import { HealthModule } from './health/health.module';
import { LoggingModule } from './logging/logging.module';
import { OrdersModule } from './orders/orders.module';
import { ResourceModule } from './resource/resource.module';
import { UsersModule } from './users/users.module';

@Module({
  imports: [
    AppConfigModule,
    LoggingModule,
    DatabaseModule,
    CommonModule,
    RateLimitModule,
    AuthModule,
    UsersModule,
    OrdersModule,
    ResourceModule,
    HealthModule,
    DemoModule,
  ],
})
export class AppModule {}
