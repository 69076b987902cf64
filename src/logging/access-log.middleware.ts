import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { requestIdOf } from '../common/request-id.middleware';

/**
 * One JSON line per request, with pino-http's field names: request id, method, path (never the query string,
 * which may hold codes), matched route, status and duration in ms. No header, query or body is logged.
 */
export function accessLogMiddleware(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    res.once('finish', () => {
      const line = {
        req: { id: requestIdOf(req), method: req.method, path: req.path },
        route: (req.route as { path?: string } | undefined)?.path ?? null,
        res: { statusCode: res.statusCode },
        responseTime: Math.round(performance.now() - started),
      };
      if (res.statusCode >= 500) logger.error(line, 'request errored');
      else logger.info(line, 'request completed');
    });
    next();
  };
}
