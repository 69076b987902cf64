import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { AppConfig } from '../config/app-config';

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

const rootLoggerProvider = {
  provide: ROOT_LOGGER,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => pino({ level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' } }),
};

/**
 * JSON logs (pino). Requests are logged by the lean middleware in `access-log.middleware.ts` (one line each)
 * rather than pino-http, whose per-request child loggers cost more than the rest of a request here.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      providers: [rootLoggerProvider],
      inject: [ROOT_LOGGER],
      useFactory: (logger: pino.Logger) => ({ pinoHttp: { logger }, forRoutes: [] }),
    }),
  ],
  providers: [rootLoggerProvider],
  exports: [ROOT_LOGGER],
})
export class LoggingModule {}
