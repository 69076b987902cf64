import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { isStatusExpected } from '../common/not-ready.error';
import { requestIdOf } from '../common/request-id.middleware';

/**
 * Told of every answered request by the access log's own `finish` listener, so that measuring requests adds no
 * listener of its own: the method, the matched route's template (undefined when no route took the request), the
 * status and the duration in ms.
 */
export type RequestObserver = (method: string, route: string | undefined, status: number, ms: number) => void;

/**
 * One JSON line per request, with pino-http's field names: request id, method, path (never the query string,
 * which may hold codes), matched route, status and duration in ms. No header, query or body is logged. A 5xx is
 * logged at error, but for an expected one (readiness saying "not ready", as at every deploy): at info.
 */
export function accessLogMiddleware(logger: Logger, observe?: RequestObserver) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    res.on('finish', () => {
      const ms = performance.now() - started;
      // Known only now: Express sets it when a route matches (Nest's routes sit on the app's router, with their full path).
      const route = (req.route as { path?: string } | undefined)?.path;
      const line = {
        req: { id: requestIdOf(req), method: req.method, path: req.path },
        route: route ?? null,
        res: { statusCode: res.statusCode },
        responseTime: Math.round(ms),
      };
      if (res.statusCode >= 500 && !isStatusExpected(res)) logger.error(line, 'request errored');
      else logger.info(line, 'request completed');
      observe?.(req.method, route, res.statusCode, ms);
    });
    next();
  };
}
