import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

type HeaderValue = string | number | readonly string[];

/** Whether any CSP directive is computed per request (a function, e.g. a nonce): then nothing can be precomputed. */
function hasDynamicDirective(options: HelmetOptions): boolean {
  const csp = options.contentSecurityPolicy;
  if (!csp || csp === true) return false;
  return Object.values(csp.directives ?? {}).some(
    (value) => typeof value === 'function' || (Array.isArray(value) && value.some((item) => typeof item === 'function')),
  );
}

/**
 * helmet, with its headers worked out once. helmet decides the headers (as configured); with no per-request
 * directive they are the same for every response, so they are recorded from one run of helmet's middleware at
 * start and set by one middleware afterwards, instead of by a chain of a dozen middlewares on every request.
 * With a per-request directive, or if helmet does anything but set and remove headers, helmet runs per request.
 */
export function securityHeaders(options: HelmetOptions): RequestHandler {
  const middleware = helmet(options);
  if (hasDynamicDirective(options)) return middleware;
  const set: [string, HeaderValue][] = [];
  const removed: string[] = [];
  let completed = false;
  const recorder = {
    setHeader(name: string, value: HeaderValue) {
      set.push([name, value]);
      return recorder;
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  try {
    middleware({} as Request, recorder as unknown as Response, (error?: unknown) => {
      completed = error === undefined;
    });
  } catch {
    completed = false;
  }
  if (!completed) return middleware;
  return (_req: Request, res: Response, next: NextFunction): void => {
    for (const [name, value] of set) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
}
