import type { IncomingMessage, ServerResponse } from 'node:http';
import { tracingChannel } from 'node:diagnostics_channel';
import type { Application, RequestHandler } from 'express';

/** What this needs of a layer of Express's router (router 2.x). */
interface RouterLayer {
  route?: { path: unknown; _handlesMethod(method: string): boolean };
  handle: (...args: unknown[]) => unknown;
  handleRequest(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
  match(path: string): unknown;
}

type RoutedRequest = IncomingMessage & {
  route?: unknown;
  params?: Record<string, string>;
  [SKIP]?: RouterLayer;
};
type Next = (error?: unknown) => void;

/**
 * A path-to-regexp path with nothing but literal segments (no parameter, wildcard, group or escape), and nothing
 * the router's reading of a URL (parseurl) would cut or decode: no `#`, `%` or whitespace.
 */
const LITERAL_PATH = /^\/[^:*?+(){}[\]!\\#%\s]*$/;
/** A path no route serves: a middleware layer that takes it takes every path. */
const PROBE = '/.static-routes-probe/0';
/** Set on a request whose route, reached through the index, passed it on: the router then skips that route. */
const SKIP = Symbol('staticRouteSkip');
/** Express's router (2.x) traces each layer on this channel; a request it traces (an APM agent listens) walks. */
const ROUTER_TRACING = tracingChannel('express.router.request');

/**
 * Express's router finds a request's route by trying each layer in turn: this app has some sixty, and a request
 * for `/api/resource` tried 55 of them, `/token` 32 (the index took that route's CPU per request to 0.92-0.94x,
 * see README, Performance). This puts one layer in front of the routes (after the last middleware for every path
 * registered among them, if any: routes before it keep the walk) that looks the request's exact path up in
 * a map of the routes whose path is literal, and runs the route found there the way the router would
 * (`req.route`, empty `req.params`, the layer's own `handleRequest`).
 *
 * Same answers as the walk: a path is indexed only if no layer between the index and its route matches it (a
 * parameter route or a mount registered earlier still wins where it did), only its exact spelling is looked up
 * (other cases, a trailing slash or percent-encoding take the walk), and HEAD and OPTIONS (which the router
 * answers from several routes) always walk, as does every request while the router's tracing channel has a
 * listener (its spans name each layer and route). A route that passes the request on (`next()`) is skipped by
 * the walk that follows, as the router would have gone on after it. Call it once every route is registered;
 * returns the indexed paths.
 */
export function indexStaticRoutes(app: Application): string[] {
  const stack = (app as unknown as { router?: { stack?: RouterLayer[] } }).router?.stack;
  if (!stack) return [];
  // Right before the first route, or after the last middleware that takes every path if one comes later (a
  // global `app.use` after the documentation's routes): what the walk runs before a route still runs first.
  let first = stack.findIndex((layer) => layer.route);
  if (first < 0) return [];
  stack.forEach((layer, position) => {
    if (position >= first && !layer.route && layer.match(PROBE)) first = position + 1;
  });
  const index = new Map<string, RouterLayer[]>();
  stack.forEach((layer, position) => {
    const path = layer.route?.path;
    if (position < first || typeof path !== 'string' || !LITERAL_PATH.test(path)) return;
    // Another layer before this one that takes the path keeps it on the walk (the router would go there first).
    for (let before = first; before < position; before++) {
      const other = stack[before];
      if (other.route?.path !== path && other.match(path)) return;
    }
    let layers = index.get(path);
    if (!layers) index.set(path, (layers = []));
    layers.push(layer);
    skipWhenPassedOn(layer);
  });
  if (index.size === 0) return [];

  function staticRoute(req: RoutedRequest, res: ServerResponse, next: Next): void {
    const method = req.method ?? '';
    const layers = method === 'HEAD' || method === 'OPTIONS' || traced() ? undefined : index.get(pathOf(req));
    const layer = layers?.find((candidate) => candidate.route!._handlesMethod(method));
    if (!layer) return next();
    req.route = layer.route;
    req.params = Object.create(null) as Record<string, string>; // as path-to-regexp's own match
    layer.handleRequest(req, res, (error?: unknown) => {
      if (error === undefined || error === null || error === 'route') req[SKIP] = layer;
      next(error === 'route' ? undefined : error);
    });
  }
  app.use(staticRoute as unknown as RequestHandler);
  stack.splice(first, 0, stack.pop()!);
  return [...index.keys()];
}

/** The request's path as the router sees it (without the query). */
function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/** Whether the router's tracing has a listener (then the walk, which records each layer and route it takes). */
function traced(): boolean {
  const { start, end, asyncStart, asyncEnd, error } = ROUTER_TRACING;
  return start.hasSubscribers || end.hasSubscribers || asyncStart.hasSubscribers || asyncEnd.hasSubscribers || error.hasSubscribers;
}

function skipWhenPassedOn(layer: RouterLayer): void {
  const handleRequest = layer.handleRequest;
  layer.handleRequest = function (req: RoutedRequest, res: ServerResponse, next: Next) {
    if (req[SKIP] === layer) return next();
    return handleRequest.call(this, req, res, next);
  };
}
