import { Global, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AppLogger } from './app-logger';
import pino from 'pino';
import pinoPretty from 'pino-pretty';
import { AppConfig } from '../config/app-config';
import { traceLogFields, tracingEnabled } from '../telemetry/tracing';
import { TurnBatchedStdout } from './turn-batched-stdout';

/** The one pino instance: application logs (through nestjs-pino's Logger) and the access log both write to it. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'res.headers.location',
  '*.password',
  '*.client_secret',
  '*.code',
  '*.code_verifier',
  '*.refresh_token',
  '*.access_token',
  '*.token',
];

/** The access log's logger: same destination and level as the root logger, without redaction (see below). */
export const ACCESS_LOGGER = Symbol('ACCESS_LOGGER');
const LOG_DESTINATION = Symbol('LOG_DESTINATION');

let sharedStdout: TurnBatchedStdout | undefined;
const stdoutLines = (): TurnBatchedStdout => (sharedStdout ??= new TurnBatchedStdout());

const destinationProvider = {
  provide: LOG_DESTINATION,
  inject: [AppConfig],
  useFactory: (config: AppConfig): pino.DestinationStream =>
    config.logFormat === 'pretty'
      ? // LOG_FORMAT=pretty (by default in development on a terminal): one readable line per entry, in process.
        pinoPretty({
          destination: 1,
          colorize: Boolean(process.stdout.isTTY),
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
          singleLine: true,
        })
      : stdoutLines(),
};

/** With tracing on, every line written while a span is active carries its trace and span ids. */
const traceCorrelation = (): pino.LoggerOptions => (tracingEnabled() ? { mixin: traceLogFields } : {});

const rootLoggerProvider = {
  provide: ROOT_LOGGER,
  inject: [AppConfig, LOG_DESTINATION],
  useFactory: (config: AppConfig, destination: pino.DestinationStream) =>
    pino({ level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' }, ...traceCorrelation() }, destination),
};

/**
 * The access log writes only fields it builds itself (ids, method, path, route, status, duration; never headers,
 * query strings or bodies), so it skips the redaction pass that every application log line goes through, which
 * was a tenth of the CPU of a cheap request.
 */
const accessLoggerProvider = {
  provide: ACCESS_LOGGER,
  inject: [AppConfig, LOG_DESTINATION],
  useFactory: (config: AppConfig, destination: pino.DestinationStream) =>
    pino({ level: config.logLevel, ...traceCorrelation() }, destination),
};

/** The pino instances and their shared destination: one of each per application, for every module (global). */
@Global()
@Module({
  providers: [destinationProvider, rootLoggerProvider, accessLoggerProvider],
  exports: [ROOT_LOGGER, ACCESS_LOGGER],
})
class PinoLoggersModule {}

/**
 * JSON logs (pino), or human-readable ones with `LOG_FORMAT=pretty`. Requests are logged by the lean middleware in `access-log.middleware.ts` (one line each)
 * rather than pino-http, whose per-request child loggers cost more than the rest of a request here.
 */
@Module({
  imports: [
    PinoLoggersModule,
    LoggerModule.forRootAsync({
      imports: [PinoLoggersModule],
      inject: [ROOT_LOGGER],
      useFactory: (logger: pino.Logger) => ({ pinoHttp: { logger }, forRoutes: [] }),
    }),
  ],
  providers: [AppLogger],
  exports: [PinoLoggersModule, AppLogger],
})
export class LoggingModule {}
