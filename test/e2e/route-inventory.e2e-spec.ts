import { randomUUID } from 'node:crypto';
import { Controller, Post, Query, RequestMethod, type Type } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { bearerChallenge, registerClient, token } from '../support/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_KEY, type AccessRule, IS_PUBLIC_KEY } from '../../src/auth/auth.decorators';
import { allScopes, scopeRole } from '../../src/auth/scopes';
import { NoQueryParamsPipe } from '../../src/common/validation';
import { type TestApp, createTestApp } from '../support/test-app';

/**
 * The metadata keys Nest's public decorators write, learnt from a probe decorated with them (Nest names these keys
 * only in its internal modules): a handler's path and method, a controller's path, and a handler's parameters
 * (keyed `<type>:<index>`, the type of `@Query()` read off the probe's one parameter).
 */
const NEST = (() => {
  class Probe {
    handler(_query: unknown): void {}
  }
  Post('probe-path')(Probe.prototype, 'handler', Object.getOwnPropertyDescriptor(Probe.prototype, 'handler')!);
  Query()(Probe.prototype, 'handler', 0);
  Controller('probe-prefix')(Probe);
  const keyOf = (target: object, value: unknown) => Reflect.getMetadataKeys(target).find((k) => Reflect.getMetadata(k, target) === value);
  const [args] = Reflect.getMetadataKeys(Probe, 'handler') as unknown[];
  const [querySlot] = Object.keys((Reflect.getMetadata(args, Probe, 'handler') ?? {}) as object);
  const keys = {
    path: keyOf(Probe.prototype.handler, 'probe-path'),
    method: keyOf(Probe.prototype.handler, RequestMethod.POST),
    prefix: keyOf(Probe, 'probe-prefix'),
    args,
    queryType: querySlot?.split(':')[0],
  };
  for (const [name, key] of Object.entries(keys)) if (key === undefined) throw new Error(`the probe found no key for ${name}`);
  return keys as Record<keyof typeof keys, string>;
})();

interface Route {
  method: string;
  path: string;
  controller: string;
  handler: string;
  isPublic: boolean;
  scopes: unknown;
  /** How the route declares its query string: a DTO class, `@NoQueryParams()`, or not at all. */
  query: 'dto' | 'none' | undefined;
  anyScope: boolean;
  roles: readonly string[] | undefined;
  clientTokens: boolean;
  ownRecords: boolean;
}

/**
 * The public set: `/authorize*`, `/token`, `/revoke`, `/introspect`, `/login` and its second steps `/login/code` and `/login/enrol`, `/logout`, `/end-session*` (OpenID
 * Connect RP-initiated logout, whose confirmation form is checked against the login session), `/register*` (dynamic
 * registration, which takes its own tokens), the account pages `/account/apps*` and `/account/security*` (the login session is their
 * authentication), `/.well-known/*`, `/health/*`, `/docs*`, `/metrics` (public to the bearer guard only: its own
 * guard admits the configured networks and the metrics token, a scraper holds no access token), and the demo
 * client's redirect URI.
 */
const PUBLIC_PATTERNS = [
  /^\/authorize(\/.*)?$/,
  /^\/token$/,
  /^\/par$/,
  /^\/device_authorization$/,
  /^\/device(\/decision)?$/,
  /^\/revoke$/,
  /^\/introspect$/,
  /^\/register(\/:clientId)?$/,
  /^\/login(\/code|\/enrol|\/step-up|\/passkey(\/options)?)?$/,
  /^\/logout$/,
  /^\/end-session(\/confirm)?$/,
  /^\/account\/apps(\/revoke)?$/,
  /^\/account\/security(\/totp(\/confirm|\/remove)?|\/passkeys(\/options|\/rename|\/remove)?)?$/,
  /^\/assets\/(webauthn|passkeys)\.js$/,
  /^\/\.well-known\/.+$/,
  /^\/health\/.+$/,
  /^\/docs(\/.*)?$/,
  /^\/metrics$/,
  /^\/demo\/callback$/,
];

/**
 * Public routes the contract names (authorization server, operations, docs), the connected-apps page and the
 * metrics, which must exist and need no access token.
 */
const REQUIRED_PUBLIC = [
  'GET /authorize',
  'POST /authorize/consent',
  'POST /token',
  'POST /par',
  // RFC 8628: the device authorization endpoint and the page where the person enters the code.
  'POST /device_authorization',
  'GET /device',
  'POST /device',
  'POST /device/decision',
  'POST /revoke',
  'POST /introspect',
  'GET /login',
  'POST /login',
  'POST /logout',
  'GET /end-session',
  'POST /end-session',
  'POST /end-session/confirm',
  'GET /account/apps',
  'POST /account/apps/revoke',
  'GET /.well-known/jwks.json',
  'GET /.well-known/oauth-authorization-server',
  'GET /.well-known/openid-configuration',
  'GET /health/live',
  'GET /health/ready',
  // A scraper holds no access token: the route's own guard admits METRICS_ALLOW's networks and METRICS_TOKEN.
  'GET /metrics',
];

/**
 * Routes of the OAuth protocol and its HTML pages, whose query strings follow RFC 6749 (unrecognised parameters
 * are ignored, section 3.1) instead of being declared. Every other route declares its query.
 */
const PROTOCOL_ROUTES = [
  'GET /authorize',
  'POST /authorize/consent',
  'POST /token',
  'POST /par',
  'POST /device_authorization',
  'GET /device',
  'POST /device',
  'POST /device/decision',
  'POST /revoke',
  'POST /introspect',
  'GET /login',
  'POST /login',
  'POST /login/code',
  'POST /login/enrol',
  // Step-up: where /authorize sends a session weaker than the request's level (return_to and acr, as /login's query).
  'GET /login/step-up',
  'POST /logout',
  // OpenID Connect RP-Initiated Logout: a protocol endpoint and its confirmation form.
  'GET /end-session',
  'POST /end-session',
  'POST /end-session/confirm',
  'GET /demo/callback',
  // RFC 7591/7592: protocol endpoints, which ignore parameters they do not know.
  'POST /register',
  'GET /register/:clientId',
  'PUT /register/:clientId',
  'DELETE /register/:clientId',
];

/**
 * The contract's routes that only an administrator may call (listing, creating and deleting users; the admin API
 * for clients; the audit trail). A module may add its own: which routes are admin-only is read from the routes'
 * `@Access({ people })` and checked against what they answer.
 */
const ADMIN_ONLY = [
  'GET /users',
  'POST /users',
  'DELETE /users/:userId',
  'GET /admin/clients',
  'GET /admin/clients/:clientId',
  'POST /admin/clients',
  'PUT /admin/clients/:clientId',
  'POST /admin/clients/:clientId/secret',
  'DELETE /admin/clients/:clientId',
  'GET /admin/audit-events',
];

/**
 * The contract's routes a client-credentials token (no user) may call; every other protected route acts for a
 * person. A module may add its own with `clientTokens: true`: the test reads them from the declarations.
 */
const CLIENT_TOKEN_ROUTES = ['GET /api/resource', 'GET /users'];

/** The contract's routes on a person's own records ("self or admin"): another person's answer 404. */
const OWN_RECORDS = [
  'GET /users/:userId',
  'PUT /users/:userId',
  'GET /users/:userId/orders',
  'GET /users/:userId/orders/:orderId',
  'POST /users/:userId/orders',
];

/** Reads a handler's `@Query()` parameter: a DTO class, or the pipe of `@NoQueryParams()`. */
function queryDeclaration(controller: Type<unknown>, name: string): Route['query'] {
  const args = (Reflect.getMetadata(NEST.args, controller, name) ?? {}) as Record<string, { index: number; pipes?: unknown[] }>;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, name) ?? []) as unknown[];
  for (const [slot, arg] of Object.entries(args)) {
    if (slot.split(':')[0] !== NEST.queryType) continue;
    if (arg.pipes?.some((pipe) => pipe instanceof NoQueryParamsPipe)) return 'none';
    const type = types[arg.index];
    if (typeof type === 'function' && type !== Object) return 'dto';
  }
  return undefined;
}

/** The resource routes and the scope each needs (`GET /api/resource`: any valid token). */
const RESOURCE_SCOPES: Record<string, string[] | 'any valid token'> = {
  'GET /api/resource': 'any valid token',
  'GET /users': ['users:read'],
  'GET /users/:userId': ['users:read'],
  'POST /users': ['users:write'],
  'PUT /users/:userId': ['users:write'],
  'DELETE /users/:userId': ['users:write'],
  'GET /users/:userId/orders': ['orders:read'],
  'GET /users/:userId/orders/:orderId': ['orders:read'],
  'POST /users/:userId/orders': ['orders:write'],
  'GET /admin/clients': ['clients:admin'],
  'GET /admin/clients/:clientId': ['clients:admin'],
  'POST /admin/clients': ['clients:admin'],
  'PUT /admin/clients/:clientId': ['clients:admin'],
  'POST /admin/clients/:clientId/secret': ['clients:admin'],
  'DELETE /admin/clients/:clientId': ['clients:admin'],
  'GET /admin/audit-events': ['audit:read'],
  'GET /userinfo': ['openid'],
  'POST /userinfo': ['openid'],
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
    const prefixes = asList(reflector.get(NEST.prefix, controller));
    for (const name of scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
      const handler = (instance as Record<string, unknown>)[name] as (...args: unknown[]) => unknown;
      const paths = reflector.get<string | string[] | undefined>(NEST.path, handler);
      if (paths === undefined) continue;
      const method = RequestMethod[reflector.get<RequestMethod>(NEST.method, handler)];
      const targets = [handler, controller];
      const rule = reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_KEY, targets);
      for (const prefix of prefixes) {
        for (const path of asList(paths)) {
          routes.push({
            method,
            path: joinPath(prefix, path),
            controller: controller.name,
            handler: name,
            // Read as the global guard reads it: the handler first, then the class.
            isPublic: reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets) === true,
            scopes: rule?.scopes === 'any' ? undefined : rule?.scopes,
            query: queryDeclaration(controller, name),
            anyScope: rule?.scopes === 'any',
            roles: rule === undefined || rule.people === 'any' ? undefined : rule.people,
            clientTokens: rule?.clientTokens === true,
            ownRecords: rule?.ownRecords === true,
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

  it('discovers the routes of every controller, including the resource routes', () => {
    expect(IS_PUBLIC_KEY).toBe('auth:isPublic');
    expect(ACCESS_KEY).toBe('auth:access');
    const keys = routes.map(key);
    for (const required of [...Object.keys(RESOURCE_SCOPES), ...REQUIRED_PUBLIC]) expect(keys).toContain(required);
  });

  it('registers no method and path twice', () => {
    const keys = routes.map(key);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
  });

  it('marks public only routes of the approved public set', () => {
    const unapproved = routes
      .filter((r) => r.isPublic && !isApprovedPublicPath(r.path))
      .map((r) => `${key(r)} (${r.controller}.${r.handler})`);
    expect(unapproved).toEqual([]);
  });

  it('marks public every route the contract names as public', () => {
    const publicKeys = routes.filter((r) => r.isPublic).map(key);
    for (const required of REQUIRED_PUBLIC) expect(publicKeys).toContain(required);
  });

  it("declares on every route that is not public either a non-empty list of known scopes or scopes: 'any'", () => {
    const offenders = routes
      .filter((r) => !r.isPublic)
      .filter((r) =>
        r.anyScope
          ? r.scopes !== undefined
          : !Array.isArray(r.scopes) ||
            r.scopes.length === 0 ||
            (r.scopes as unknown[]).some((s) => !(allScopes() as unknown[]).includes(s)),
      )
      .map((r) => `${key(r)} (${r.controller}.${r.handler}): ${JSON.stringify(r.scopes)}`);
    expect(offenders).toEqual([]);
  });

  it('gives each resource route exactly the scope the contract names', () => {
    for (const [route, scopes] of Object.entries(RESOURCE_SCOPES)) {
      const found = routes.find((r) => key(r) === route);
      expect(found?.isPublic, route).toBe(false);
      if (scopes === 'any valid token') {
        expect(found?.anyScope, route).toBe(true);
        expect(found?.scopes, route).toBeUndefined();
      } else {
        expect(found?.scopes, route).toEqual(scopes);
      }
    }
  });

  it('declares the query string of every route outside the OAuth protocol (a DTO or @NoQueryParams())', () => {
    const undeclared = routes
      .filter((r) => !PROTOCOL_ROUTES.includes(key(r)) && r.query === undefined)
      .map((r) => `${key(r)} (${r.controller}.${r.handler})`);
    expect(undeclared).toEqual([]);
    for (const route of PROTOCOL_ROUTES) expect(routes.map(key)).toContain(route);
  });

  it("restricts the contract's admin-only routes, and every route declaring people: ['admin'], to administrators: 403 to anyone else", async () => {
    const declared = routes.filter((r) => r.roles !== undefined);
    expect(declared.map(key)).toEqual(expect.arrayContaining(ADMIN_ONLY));
    for (const route of declared) expect(route.roles, key(route)).toEqual(['admin']);
    // A person with every scope but not the role: refused before the body or the record is looked at.
    const person = await t.createUser();
    const token = await t.token(person.id, allScopes());
    const answered: string[] = [];
    for (const route of declared) {
      const path = route.path.replace(/:[A-Za-z]+/g, () => randomUUID());
      const res = await t.http()[route.method.toLowerCase() as 'get'](path).set('Authorization', `Bearer ${token}`).send({});
      if (res.status !== 403) answered.push(`${key(route)} -> ${res.status}`);
    }
    expect(answered).toEqual([]);
  });

  it("answers 404 to a person reading another person's records on every route declaring ownRecords under a :userId (the contract's among them)", async () => {
    const own = routes.filter((r) => r.ownRecords && r.path.includes(':userId'));
    expect(own.map(key)).toEqual(expect.arrayContaining(OWN_RECORDS));
    for (const route of own) expect(route.roles, key(route)).toBeUndefined();
    const [person, other] = [await t.createUser(), await t.createUser()];
    const token = await t.token(
      person.id,
      allScopes().filter((s) => scopeRole(s) === undefined),
    );
    const revealed: string[] = [];
    // Reads only: a write's body is validated before the record is looked up (a 400 says nothing of its owner).
    for (const route of own.filter((r) => r.method === 'GET')) {
      const path = route.path.replace(/:[A-Za-z]+/g, (param) => (param === ':userId' ? other.id : randomUUID()));
      const res = await t.http().get(path).set('Authorization', `Bearer ${token}`);
      if (res.status !== 404) revealed.push(`${key(route)} -> ${res.status}`);
    }
    expect(revealed).toEqual([]);
    // And the person's own records are theirs: the same routes answer 200 on their own id.
    const mine = await t.http().get(`/users/${person.id}/orders`).set('Authorization', `Bearer ${token}`);
    expect(mine.status).toBe(200);
  });

  it("lets client-credentials tokens into the routes declaring clientTokens (the contract's among them), and into no other", async () => {
    const accepting = routes.filter((r) => r.clientTokens);
    expect(accepting.map(key)).toEqual(expect.arrayContaining(CLIENT_TOKEN_ROUTES));
    for (const route of accepting) expect(route.isPublic, key(route)).toBe(false);
    // A service client allowed every scope no role is bound to: every other protected route refuses its token.
    const scopes = allScopes().filter((s) => scopeRole(s) === undefined);
    const service = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: scopes.join(' ') });
    const issued = await token(t, service, { grant_type: 'client_credentials' });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const admitted: string[] = [];
    for (const route of routes.filter((r) => !r.isPublic && !r.clientTokens)) {
      const path = route.path.replace(/:[A-Za-z]+/g, () => randomUUID());
      const res = await t.http()[route.method.toLowerCase() as 'get'](path).set('Authorization', `Bearer ${issued.body.access_token}`);
      if (res.status !== 403) admitted.push(`${key(route)} -> ${res.status}`);
    }
    expect(admitted).toEqual([]);
  });

  it('answers every protected route with 401 Bearer realm="api" and the scope it needs when no token is sent', async () => {
    const wrong: string[] = [];
    for (const route of routes.filter((r) => !r.isPublic)) {
      const path = route.path.replace(/:[A-Za-z]+/g, () => randomUUID());
      const res = await t.http()[route.method.toLowerCase() as 'get'](path);
      // The scope the route needs, so that a client asks for it first (RFC 6750 3; the MCP authorization spec).
      const scope = Array.isArray(route.scopes) ? `, scope="${route.scopes.join(' ')}"` : '';
      if (res.status !== 401 || res.headers['www-authenticate'] !== bearerChallenge(t, `realm="api"${scope}`))
        wrong.push(`${key(route)} -> ${res.status} ${res.headers['www-authenticate']}`);
    }
    expect(wrong).toEqual([]);
  });

  it('lets the required public routes through without a token (no bearer challenge)', async () => {
    const challenged: string[] = [];
    for (const route of routes.filter((r) => r.isPublic && r.method === 'GET')) {
      const res = await t.http().get(route.path.replace(/:[A-Za-z]+/g, () => randomUUID()));
      if (res.status === 401 || /^Bearer/i.test(String(res.headers['www-authenticate'] ?? '')))
        challenged.push(`${key(route)} -> ${res.status}`);
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
    const isMiddlewareCatchAll = (layer: Layer) =>
      /^\{?\/?\*/.test(layer.route!.path) && Boolean(layer.route!.methods.get && layer.route!.methods.post && layer.route!.methods.delete);
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
