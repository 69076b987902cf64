import { type DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';
import { type ConfigClass, ENV, configProvider } from './env';

/**
 * Provides the environment ({@link ENV}) and the service-wide {@link AppConfig} to every module. A feature module
 * imports `AppConfigModule.forFeature(ItsConfig)` for its own variables. Tests override {@link ENV}.
 */
/** One module's own configuration class, provided where that module imports it. */
@Module({})
class FeatureConfigModule {}

@Global()
@Module({
  providers: [{ provide: ENV, useFactory: () => process.env }, configProvider(AppConfig)],
  exports: [ENV, AppConfig],
})
export class AppConfigModule {
  static forFeature<T>(type: ConfigClass<T>): DynamicModule {
    return { module: FeatureConfigModule, providers: [configProvider(type)], exports: [type] };
  }
}
