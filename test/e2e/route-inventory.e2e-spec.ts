import { randomUUID } from 'node:crypto';
import { DiscoveryModule } from '@nestjs/core';
import { bearerChallenge, registerClient, token } from '../support/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_KEY, IS_PUBLIC_KEY } from '../../src/auth/auth.decorators';
import { allScopes, scopeRole } from '../../src/auth/scopes';
import {
  ADMIN_ONLY,
  CLIENT_TOKEN_ROUTES,
  OWN_RECORDS,
  PROTOCOL_ROUTES,
  PUBLIC_PATTERNS,
  REQUIRED_PUBLIC,
  RESOURCE_SCOPES,
} from '../support/route-contract';
import { OwnRecordsProbe } from '../support/own-records';
import { type Route, discoverRoutes, key } from '../support/route-discovery';
import { type TestApp, createTestApp } from '../support/test-app';

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

  it("answers exactly its not-found 404 to another person on every route declaring ownRecords with an id, reads and writes, and leaves the owner's record as it was", async () => {
    // Every method and path with an id (GET, PUT, PATCH, DELETE, POST under an id); /userinfo has none.
    const own = routes.filter((r) => r.ownRecords && /\/:[A-Za-z]+/.test(r.path));
    expect(own.map(key)).toEqual(expect.arrayContaining(OWN_RECORDS));
    for (const route of own) expect(route.roles, key(route)).toBeUndefined();
    // The owner's records are made through the API first (a route whose record cannot be made fails here, named).
    const probe = await OwnRecordsProbe.start(t, routes, own);
    const answered: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const route of own) {
      const result = await probe.probe(route);
      answered[key(route)] = { answer: result.answered, ownerReadsAfterwards: result.readBack[1] };
      expected[key(route)] = { answer: result.expected, ownerReadsAfterwards: result.readBack[0] };
    }
    expect(answered).toEqual(expected);
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
