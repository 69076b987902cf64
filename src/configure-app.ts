import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppConfig } from './config/app-config';
import { requestIdMiddleware } from './common/request-id.middleware';

export const BODY_LIMIT = '100kb';

/**
 * Everything that must stay outside the module graph (Express settings, body parsers, shutdown hooks), in one
 * place that `main.ts` and the e2e harness both call, so tests run the production setup.
 * The app must be created with `{ bodyParser: false }`.
 */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(AppConfig);
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  app.use(requestIdMiddleware(config.trustProxy));
  app.useBodyParser('json', { limit: BODY_LIMIT, type: ['application/json', 'application/*+json'] });
  app.useBodyParser('urlencoded', { limit: BODY_LIMIT, extended: false, parameterLimit: 100 });
  if (config.corsOrigins.length) app.enableCors({ origin: config.corsOrigins, credentials: true });
  app.enableShutdownHooks();
  return app;
}
