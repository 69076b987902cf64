import type { Application } from 'express';
import { type MatchFunction, match } from 'path-to-regexp';

/** One entry of the router's documented `listRoutes()` (router 2.3+, Express 5's `app.router`). */
interface ListedRoute {
  path: string | RegExp;
  methods: string[] | undefined;
}

/** Matchers by route path, compiled once (the app's routes are a fixed set). */
const matchers = new Map<string, MatchFunction<object>>();

/** Whether a route path takes `path`, as Express's router matches it: case-insensitive, a trailing slash allowed. */
function matches(routePath: string | RegExp, path: string): boolean {
  if (routePath instanceof RegExp) return routePath.test(path);
  let matcher = matchers.get(routePath);
  if (!matcher) matchers.set(routePath, (matcher = match(routePath, { sensitive: false, trailing: true, end: true, decode: false })));
  return matcher(path) !== false;
}

/**
 * The methods the app's routes answer at `path`, upper case and sorted, HEAD wherever GET (Express answers HEAD
 * with the GET route); none when no route matches the path at all. Read from Express's router (`listRoutes()`),
 * so it covers every module's routes without a list kept by hand. For error answers only: it walks every route.
 */
export function allowedMethods(app: Application, path: string): string[] {
  const routes = (app as { router?: { listRoutes?(): ListedRoute[] } }).router?.listRoutes?.() ?? [];
  const methods = new Set<string>();
  for (const route of routes) {
    if (!route.methods || !matches(route.path, path)) continue;
    for (const method of route.methods) if (method !== '*') methods.add(method);
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}
