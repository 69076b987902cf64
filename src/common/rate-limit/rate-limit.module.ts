import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../../config/app-config';
import { RateLimitGuard, rateLimitOptions } from './rate-limit';

@Global()
@Module({
  imports: [ThrottlerModule.forRootAsync({ inject: [AppConfig], useFactory: rateLimitOptions })],
  providers: [RateLimitGuard],
  exports: [ThrottlerModule, RateLimitGuard],
})
export class RateLimitModule {}
