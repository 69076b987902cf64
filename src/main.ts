// First: a Node.js too old for the native modules stops here, in one line.
import './node-version';
// Then: with OTEL_EXPORTER_OTLP_ENDPOINT set, tracing hooks http and pg before anything loads them.
import './telemetry/start';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type pino from 'pino';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { ConfigError, validateConfiguration } from './config/env';
import { configureApp, httpServerOptions } from './configure-app';
import { databaseFailure } from './database/connection-failure';
import { DemoDataService } from './demo/demo-data.service';
import { demoBlock } from './demo/demo-commands';
import { ShutdownDrain } from './health/shutdown-drain';
import { ExpressHttpAdapter } from './common/express-adapter';
import { KeyEncryptionError } from './keys/key-encryption';
import { StartupCheckError } from './common/startup-check.error';
import { ROOT_LOGGER } from './logging/logging.module';
import { SigningKeysService } from './keys/signing-keys.service';
import { stopTracing } from './telemetry/tracing';

async function bootstrap(): Promise<void> {
  // Validate the configuration before anything else, so a bad variable is one clear line.
  validateConfiguration(process.env);
  // Node's server takes its timeouts when it is created, before the application and its configuration exist.
  const adapter = new ExpressHttpAdapter(httpServerOptions(new AppConfig(process.env)));
  const app = await NestFactory.create<NestExpressApplication>(AppModule, adapter, {
    bodyParser: false,
    bufferLogs: true,
    // A failed start says why in one line (below), not with Nest's buffered start-up lines and stack traces.
    autoFlushLogs: false,
    abortOnError: false,
  });
  configureApp(app);
  app.flushLogs();
  const config = app.get(AppConfig);
  await app.listen(config.port, config.host);
  // SIGTERM/SIGINT: readiness turns 503 (for SHUTDOWN_DRAIN_SECONDS still serving), then stop accepting
  // connections, finish requests in flight, close the database, exit 0.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app
      .get(ShutdownDrain)
      .begin(signal)
      .then(() => app.close())
      .then(() => stopTracing())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`shutdown failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  const unsealed = await app.get(SigningKeysService).unsealedCount();
  if (unsealed > 0) {
    new Logger('Bootstrap').warn(`${unsealed} signing key(s) not sealed under KEY_ENCRYPTION_KEY: run keys:reencrypt`);
  }
  // Seeded once the port is open: a start that cannot listen (EADDRINUSE) has created nothing it would not show.
  const demoData = app.get(DemoDataService);
  const demo = await demoData.seedIfEmpty();
  const reminder = demo ? undefined : await demoData.adminReminder();
  // The log lines written so far go out first, so that what to do next is the last thing on the screen.
  await new Promise<void>((resolve) => app.get<pino.Logger>(ROOT_LOGGER).flush(() => resolve()));
  process.stdout.write(`${demo ? demoBlock(demo) : (reminder ?? '')}ready: listening on ${config.listenUrl}, issuer ${config.issuer}\n`);
}

bootstrap().catch((error: unknown) => {
  const database = databaseFailure(error, process.env.DATABASE_URL);
  if (error instanceof ConfigError || error instanceof KeyEncryptionError) {
    process.stderr.write(`configuration error: ${error.message}\n`);
  } else if (error instanceof StartupCheckError) {
    process.stderr.write(`failed to start: ${error.message}\n`);
  } else if (database) {
    process.stderr.write(`failed to start: ${database}\n`);
  } else {
    process.stderr.write(`failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
