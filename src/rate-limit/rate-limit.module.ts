import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfigModule } from '../config/config.module';
import { RateLimitGuard, rateLimitOptions } from './rate-limit';
import { RateLimitConfig } from './rate-limit.config';

@Global()
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      imports: [AppConfigModule.forFeature(RateLimitConfig)],
      inject: [RateLimitConfig],
      useFactory: rateLimitOptions,
    }),
  ],
  providers: [RateLimitGuard],
  exports: [ThrottlerModule, RateLimitGuard],
})
export class RateLimitModule {}
