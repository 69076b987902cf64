import { randomUUID } from 'node:crypto';
import { RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryModule, DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IS_PUBLIC_KEY, SCOPES_KEY } from '../../src/auth/auth.decorators';
import { SCOPES } from '../../src/auth/scopes';
import { type TestApp, createTestApp } from '../support/test-app';

interface Route {
  method: string;
  path: string;
  controller: string;
  handler: string;
  isPublic: boolean;
  scopes: unknown;
}

/** SPEC 4's public set: `/authorize*`, `/token`, `/revoke`, `/introspect`, `/login`, `/logout`, `/.well-known/*`, `/health/*`, `/docs*`, and the demo client's redirect URI. */
const PUBLIC_PATTERNS = [
  /^\/authorize(\/.*)?$/,
  /^\/token$/,
  /^\/revoke$/,
  /^\/introspect$/,
  /^\/login$/,
  /^\/logout$/,
  /^\/\.well-known\/.+$/,
  /^\/health\/.+$/,
  /^\/docs(\/.*)?$/,
  /^\/demo\/callback$/,
];

/** Public routes the contract names (SPEC 3, 4 and 6), which must exist and need no token. */
const REQUIRED_PUBLIC = [
  'GET /authorize',
  'POST /authorize/consent',
  'POST /token',
  'POST /revoke',
  'POST /introspect',
  'GET /login',
  'POST /login',
  'POST /logout',
  'GET /.well-known/jwks.json',
  'GET /.well-known/oauth-authorization-server',
  'GET /health/live',
  'GET /health/ready',
];

/** The resource routes of SPEC 4 and the scope each needs (`GET /api/resource`: any valid token). */
const RESOURCE_SCOPES: Record<string, string[]> = {
  'GET /api/resource': [],
  'GET /users': ['users:read'],
  'GET /users/:userId': ['users:read'],
  'POST /users': ['users:write'],
  'PUT /users/:userId': ['users:write'],
  'DELETE /users/:userId': ['users:write'],
  'GET /users/:userId/orders': ['orders:read'],
  'GET /users/:userId/orders/:orderId': ['orders:read'],
  'POST /users/:userId/orders': ['orders:write'],
};

function joinPath(...parts: string[]): string {
  const joined = parts
    .flatMap((p) => p.split('/'))
    .filter(Boolean)
    .join('/');
  return `/${joined}`;
}

function asList(value: unknown): string[] {
  if (value === undefined) return [''];
  return Array.isArray(value) ? value : [value as string];
}

/** Every route Nest registered for a controller, read from the metadata its decorators left (no hand-kept list). */
function discoverRoutes(t: TestApp): Route[] {
  const discovery = t.app.get(DiscoveryService);
  const scanner = t.app.get(MetadataScanner);
  const reflector = t.app.get(Reflector);
  const routes: Route[] = [];
  for (const wrapper of discovery.getControllers()) {
    const { instance } = wrapper;
    const controller = wrapper.metatype as Type<unknown> | null;
    if (!instance || !controller) continue;
    const prefixes = asList(reflector.get(PATH_METADATA, controller));
    for (const name of scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
      const handler = (instance as Record<string, unknown>)[name] as (...args: unknown[]) => unknown;
      const paths = reflector.get<string | string[] | undefined>(PATH_METADATA, handler);
      if (paths === undefined) continue;
      const method = RequestMethod[reflector.get<RequestMethod>(METHOD_METADATA, handler)];
      const targets = [handler, controller];
      for (const prefix of prefixes) {
        for (const path of asList(paths)) {
          routes.push({
            method,
            path: joinPath(prefix, path),
            controller: controller.name,
            handler: name,
            // Read as the global guard reads it: the handler first, then the class.
            isPublic: reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets) === true,
            scopes: reflector.getAllAndOverride<unknown>(SCOPES_KEY, targets),
          });
        }
      }
    }
  }
  return routes;
}

const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
const isApprovedPublicPath = (path: string) => PUBLIC_PATTERNS.some((p) => p.test(path));

describe('route inventory (STYLE "Auth": deny by default, approved public set)', () => {
  let t: TestApp;
  let routes: Route[];

  beforeAll(async () => {
    t = await createTestApp({}, undefined, { imports: [DiscoveryModule] });
    routes = discoverRoutes(t);
  });
  afterAll(() => t.close());

  it('discovers the routes of every controller, including the resource routes of SPEC 4', () => {
    expect(IS_PUBLIC_KEY).toBe('auth:isPublic');
    expect(SCOPES_KEY).toBe('auth:scopes');
    const keys = routes.map(key);
    for (const required of [...Object.keys(RESOURCE_SCOPES), ...REQUIRED_PUBLIC]) expect(keys).toContain(required);
  });

  it('registers no method and path twice', () => {
    const keys = routes.map(key);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
  });

  it('marks public only routes of the approved public set', () => {
    const unapproved = routes.filter((r) => r.isPublic && !isApprovedPublicPath(r.path)).map((r) => `${key(r)} (${r.controller}.${r.handler})`);
    expect(unapproved).toEqual([]);
  });

  it('marks public every route the contract names as public', () => {
    const publicKeys = routes.filter((r) => r.isPublic).map(key);
    for (const required of REQUIRED_PUBLIC) expect(publicKeys).toContain(required);
  });

  it('declares scopes (an array of known scopes, possibly empty) on every route that is not public', () => {
    const offenders = routes
      .filter((r) => !r.isPublic)
      .filter((r) => !Array.isArray(r.scopes) || (r.scopes as unknown[]).some((s) => !(SCOPES as readonly unknown[]).includes(s)))
      .map((r) => `${key(r)} (${r.controller}.${r.handler}): ${JSON.stringify(r.scopes)}`);
    expect(offenders).toEqual([]);
  });

  it('gives each resource route of SPEC 4 exactly the scope the contract names', () => {
    for (const [route, scopes] of Object.entries(RESOURCE_SCOPES)) {
      const found = routes.find((r) => key(r) === route);
      expect(found?.isPublic, route).toBe(false);
      expect(found?.scopes, route).toEqual(scopes);
    }
  });

  it('answers every protected route with 401 Bearer realm="api" when no token is sent', async () => {
    const wrong: string[] = [];
    for (const route of routes.filter((r) => !r.isPublic)) {
      const path = route.path.replace(/:[A-Za-z]+/g, () => randomUUID());
      const res = await t.http()[route.method.toLowerCase() as 'get'](path);
      if (res.status !== 401 || res.headers['www-authenticate'] !== 'Bearer realm="api"') wrong.push(`${key(route)} -> ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });

  it('lets the required public routes through without a token (no bearer challenge)', async () => {
    const challenged: string[] = [];
    for (const route of routes.filter((r) => r.isPublic && r.method === 'GET')) {
      const res = await t.http().get(route.path.replace(/:[A-Za-z]+/g, () => randomUUID()));
      if (res.status === 401 || /^Bearer/i.test(String(res.headers['www-authenticate'] ?? ''))) challenged.push(`${key(route)} -> ${res.status}`);
    }
    expect(challenged).toEqual([]);
  });

  it('serves /docs and /docs/openapi.json without a token (registered outside the controllers)', async () => {
    const ui = await t.http().get('/docs/');
    expect(ui.status).toBe(200);
    const doc = await t.http().get('/docs/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toEqual(expect.stringMatching(/^3\./));
  });

  it('registers no Express route outside the controllers except the /docs routes', async () => {
    type Layer = { route?: { path: string; methods: Record<string, boolean> } };
    const express = t.app.getHttpAdapter().getInstance() as { router?: { stack: Layer[] } };
    const stack = express.router?.stack ?? [];
    expect(stack.length).toBeGreaterThan(0);
    const known = new Set(routes.map((r) => r.path));
    // Middleware bound to every route (nestjs-pino's) shows up as an all-methods catch-all layer; it only passes
    // requests on, which the 404 for an unknown path below proves.
    const isMiddlewareCatchAll = (layer: Layer) => /^\{?\/?\*/.test(layer.route!.path) && Boolean(layer.route!.methods.get && layer.route!.methods.post && layer.route!.methods.delete);
    const outside = stack
      .filter((layer) => layer.route && !isMiddlewareCatchAll(layer))
      .map((layer) => layer.route!.path)
      .filter((path) => !known.has(path) && !/^\/docs(\/.*)?$/.test(path));
    expect(outside).toEqual([]);
    for (const method of ['get', 'post', 'put', 'delete', 'patch'] as const) {
      const res = await t.http()[method](`/not-a-route-${randomUUID()}`);
      expect(res.status).toBe(404);
    }
  });
});
