import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AppConfig } from '../config/app-config';

type Req = IncomingMessage & { id?: string; route?: { path?: string }; originalUrl?: string };

/**
 * JSON logs, one line per request: request id, method, route, status, duration. Headers, query strings and
 * bodies are never logged, so no password, secret, code, cookie or token can reach a log line; known secret
 * fields are redacted as well, should anything log them.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        pinoHttp: {
          level: config.logLevel,
          genReqId: (req: IncomingMessage) => (req as Req).id ?? randomUUID(),
          customSuccessObject: (req: IncomingMessage, _res: ServerResponse, value: object) => ({
            ...value,
            route: (req as Req).route?.path ?? null,
          }),
          customErrorObject: (req: IncomingMessage, _res: ServerResponse, _err: Error, value: object) => ({
            ...value,
            route: (req as Req).route?.path ?? null,
          }),
          serializers: {
            req: (req: { id?: string; method?: string; url?: string }) => ({
              id: req.id,
              method: req.method,
              path: (req.url ?? '').split('?')[0],
            }),
            res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
          },
          customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
            err || res.statusCode >= 500 ? 'error' : 'info',
          redact: {
            paths: [
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
            ],
            censor: '[redacted]',
          },
        },
      }),
    }),
  ],
})
export class LoggingModule {}
