import { Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/** Provides the validated {@link AppConfig}; tests override the provider to change settings. */
@Global()
@Module({
  providers: [{ provide: AppConfig, useFactory: () => AppConfig.fromEnv(process.env) }],
  exports: [AppConfig],
})
export class AppConfigModule {}
