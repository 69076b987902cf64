import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { StartupCheckError } from '../common/startup-check.error';
import { unregisteredFeatures } from './migrations';

/**
 * Refuses to start the service when a feature's migrations run (they are found by folder) but its module is not
 * registered (in `src/features.ts` or the application module): its tables would exist with no route, scope or
 * configuration behind them, which would otherwise go unnoticed until someone asked for its routes.
 */
@Injectable()
export class RegisteredFeaturesCheck implements OnApplicationBootstrap {
  constructor(private readonly modules: ModulesContainer) {}

  onApplicationBootstrap(): void {
    const names = [...this.modules.values()].map((module) => module.metatype?.name ?? '');
    const missing = unregisteredFeatures(names);
    if (missing.length) {
      const each = missing.map((folder) => `src/${folder} has migrations but no module of it is registered`).join('; ');
      throw new StartupCheckError(`${each}: add it to FEATURE_MODULES in src/features.ts`);
    }
  }
}
