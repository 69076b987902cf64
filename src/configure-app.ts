import type { ServerOptions } from 'node:http';
import type { NestExpressApplication, NestExpressBodyParserOptionsFor } from '@nestjs/platform-express';
import { AppConfig } from './config/app-config';
import { requestIdMiddleware } from './common/request-id.middleware';
import { checkJsonBody } from './common/json-body';
import { refuseUnreadBody } from './common/unread-body';
import helmet from 'helmet';
import { accessLogMiddleware } from './logging/access-log.middleware';
import { AppLogger } from './logging/app-logger';
import { ACCESS_LOGGER } from './logging/logging.module';
import { MetricsService } from './metrics/metrics.service';
import { setupOpenApi } from './openapi';
import { HandlerSpanInterceptor } from './telemetry/handler-span.interceptor';
import { configureCookies } from './oauth/interaction/cookies';
import { tracingEnabled } from './telemetry/tracing';

export const BODY_LIMIT = '100kb';

/**
 * Node's server options: a client that trickles its headers or body holds a connection (and its memory) only this
 * long, then Node answers 408 and closes it. Node checks every `connectionsCheckingInterval` (30 s by default), so
 * the check runs often enough for the limits to mean what they say. Given to the adapter, which creates the server.
 */
export function httpServerOptions(config: AppConfig): ServerOptions {
  const headersTimeout = config.headersTimeout * 1000;
  return { requestTimeout: config.requestTimeout * 1000, headersTimeout, connectionsCheckingInterval: Math.min(headersTimeout / 4, 1_000) };
}

/**
 * Everything that must stay outside the module graph (Express settings, helmet, body parsers, CORS, docs), in
 * one place that `main.ts` and the e2e harness both call, so tests run the production setup.
 * The app must be created with `{ bodyParser: false }`, on an `ExpressHttpAdapter` given {@link httpServerOptions}.
 */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(AppConfig);
  app.useLogger(app.get(AppLogger));
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  configureCookies(app, config.secureCookies);
  app.use(requestIdMiddleware(config.trustProxy));
  // Requests are measured from the access log's listener (one per request for both), unless METRICS=off.
  const metrics = app.get(MetricsService);
  app.use(accessLogMiddleware(app.get(ACCESS_LOGGER), metrics.enabled ? metrics.observeRequest : undefined));
  app.use(
    helmet({
      contentSecurityPolicy: { directives: { upgradeInsecureRequests: config.secureCookies ? [] : null } },
      strictTransportSecurity: config.secureCookies,
    }),
  );
  // Nest's type leaves out body-parser's `verify` because its `rawBody` option takes that hook; rawBody is off here.
  const json = { limit: BODY_LIMIT, type: ['application/json', 'application/*+json'], verify: checkJsonBody() };
  app.useBodyParser('json', json as NestExpressBodyParserOptionsFor<'json'>);
  app.useBodyParser('urlencoded', { limit: BODY_LIMIT, extended: false, parameterLimit: 100 });
  app.use(refuseUnreadBody);
  if (config.corsOrigins.length) app.enableCors({ origin: config.corsOrigins, credentials: true });
  if (tracingEnabled()) app.useGlobalInterceptors(new HandlerSpanInterceptor());
  setupOpenApi(app);
  return app;
}
