import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenIssuer } from '../../src/oauth/grants/token-issuer.service';
import { Browser, NO_RATE_LIMITS, REDIRECT_URI, authorizePath, registerClient } from '../support/oauth';
import { ALL_SCOPES, type TestApp, createTestApp } from '../support/test-app';

interface Operation {
  requestBody?: { content: Record<string, { schema: { $ref?: string; properties?: Record<string, unknown> } }> };
  responses: Record<string, unknown>;
  parameters?: { name: string; in: string; schema?: { format?: string; maximum?: number; maxLength?: number } }[];
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { additionalProperties?: boolean }> };
}

const FORM = 'application/x-www-form-urlencoded';

/** The OpenAPI document against what the service does (issue: it documented 201s and no bodies for the forms). */
describe('GET /docs/openapi.json tells the truth', () => {
  let t: TestApp;
  let doc: Document;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    doc = (await t.http().get('/docs/openapi.json')).body as Document;
  });
  afterAll(() => t.close());

  const op = (method: string, path: string): Operation => {
    const operation = doc.paths[path]?.[method];
    if (!operation) throw new Error(`${method} ${path} is not documented`);
    return operation;
  };
  const statuses = (method: string, path: string) => Object.keys(op(method, path).responses).sort();

  it.each([
    ['/token', ['200', '400', '401', '429', '503'], ['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope']],
    ['/revoke', ['200', '400', '401', '503'], ['token', 'token_type_hint']],
    ['/introspect', ['200', '400', '401', '503'], ['token', 'token_type_hint']],
  ])('POST %s: a form body with its parameters and the statuses it answers', (path, expected, fields) => {
    expect(statuses('post', path)).toEqual(expected);
    const form = op('post', path).requestBody?.content[FORM];
    expect(form).toBeDefined();
    expect(Object.keys(form!.schema.properties ?? {})).toEqual(expect.arrayContaining(fields));
  });

  it('the pages and redirects: /authorize, the consent form, /login and its code step, /logout, the connected-apps and security pages', () => {
    expect(statuses('get', '/authorize')).toEqual(['200', '302', '400']);
    expect(statuses('post', '/authorize/consent')).toEqual(['303', '400', '403', '413', '415']);
    expect(statuses('get', '/login')).toEqual(['200']);
    // 200: the form for the second factor's code, when the person has an authenticator.
    expect(statuses('post', '/login')).toEqual(['200', '303', '400', '401', '403', '413', '415', '429']);
    expect(statuses('post', '/login/code')).toEqual(['303', '400', '401', '403', '413', '415', '429']);
    expect(statuses('post', '/login/enrol')).toEqual(['200', '400', '401', '403', '413', '415', '429']);
    expect(statuses('get', '/account/security')).toEqual(['200', '302', '400']);
    expect(statuses('post', '/account/security/totp')).toEqual(['200', '400', '403', '409', '413', '415']);
    expect(statuses('post', '/account/security/totp/confirm')).toEqual(['200', '400', '403', '413', '415', '429']);
    expect(statuses('post', '/account/security/totp/remove')).toEqual(['303', '400', '403', '409', '413', '415', '429']);
    expect(statuses('post', '/logout')).toEqual(['303', '400', '403', '413', '415']);
    expect(statuses('get', '/account/apps')).toEqual(['200', '302', '400']);
    expect(statuses('post', '/account/apps/revoke')).toEqual(['303', '400', '403', '404', '413', '415']);
    for (const path of ['/authorize/consent', '/login', '/login/code', '/account/apps/revoke', '/account/security/totp/confirm'])
      expect(op('post', path).requestBody?.content[FORM]).toBeDefined();
  });

  it('201 only where something is created; GET /api/resource documents its 200', () => {
    // A 201 is a POST, with no other 2xx answer: which routes those are comes from the routes' own declarations (a module's new create route included), not from a list here.
    const created = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, o]) => '201' in o.responses)
        .map(([method, o]) => ({ route: `${method} ${path}`, method, o })),
    );
    expect(created.length).toBeGreaterThan(0);
    for (const { route, method, o } of created) {
      expect(method, route).toBe('post');
      expect(
        Object.keys(o.responses).filter((status) => /^2/.test(status)),
        route,
      ).toEqual(['201']);
    }
    // The authorization server's POSTs that create nothing (RFC 6749, 7009, 7662, OpenID Connect, its pages) must not
    // inherit Nest's default 201 in the document.
    const actions = ['/token', '/revoke', '/introspect', '/userinfo', '/login', '/logout', '/authorize/consent', '/end-session'];
    for (const path of [...actions, '/end-session/confirm', '/account/apps/revoke']) {
      expect(statuses('post', path), `post ${path}`).not.toContain('201');
    }
    expect(created.map((c) => c.route)).toEqual(expect.arrayContaining(['post /register', 'post /users', 'post /users/{userId}/orders']));
    expect(statuses('get', '/api/resource')).toContain('200');
  });

  it('ids are UUIDs, offsets have their maximum, JSON bodies allow no other field', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, o] of Object.entries(ops)) {
        for (const p of o.parameters ?? []) {
          // Client ids are the one kind of id that is not a UUID (random base64url, at most 64 characters); the RFC
          // 9728 well-known route takes the resource's own path.
          if (p.in === 'path' && p.name === 'path') expect(path).toBe('/.well-known/oauth-protected-resource/{path}');
          else if (p.in === 'path' && p.name === 'clientId') expect(p.schema?.maxLength, `${method} ${path} ${p.name}`).toBe(64);
          else if (p.in === 'path') expect(p.schema?.format, `${method} ${path} ${p.name}`).toBe('uuid');
          if (p.name === 'offset') expect(p.schema?.maximum, `${method} ${path} offset`).toBe(1_000_000_000);
        }
        const ref = o.requestBody?.content['application/json']?.schema.$ref;
        if (ref) expect(doc.components.schemas[ref.split('/').pop()!].additionalProperties, `${method} ${path}`).toBe(false);
      }
    }
  });

  /** A body made of the examples the document gives for each property of a request schema. */
  function exampleBody(method: string, path: string): Record<string, unknown> {
    const ref = op(method, path).requestBody!.content['application/json'].schema.$ref!;
    const schema = doc.components.schemas[ref.split('/').pop()!] as { properties: Record<string, { example?: unknown }> };
    const body: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(schema.properties)) {
      expect(property.example, `${method} ${path}: ${name} has an example`).toBeDefined();
      body[name] = property.example;
    }
    return body;
  }

  it("a request built from the schema's own examples is accepted", async () => {
    const admin = await t.createUser({ role: 'admin' });
    const auth = ['Authorization', `Bearer ${await t.token(admin.id)}`] as const;
    const created = await t
      .http()
      .post('/users')
      .set(...auth)
      .send(exampleBody('post', '/users'));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The example sets a password (and a role): an administrator's token of a two-factor sign-in may.
    const { token: strong } = t.app.get(TokenIssuer).mintAccessToken({
      sub: admin.id,
      clientId: 'test-client',
      scope: ALL_SCOPES.join(' '),
      grantId: randomUUID(),
      amr: ['pwd', 'otp', 'mfa'],
    });
    const replaced = await t
      .http()
      .put(`/users/${created.body.id}`)
      .set('Authorization', `Bearer ${strong}`)
      .send(exampleBody('put', '/users/{userId}'));
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    const order = await t
      .http()
      .post(`/users/${created.body.id}/orders`)
      .set(...auth)
      .send(exampleBody('post', '/users/{userId}/orders'));
    expect(order.status, JSON.stringify(order.body)).toBe(201);
  });

  it('what the OAuth endpoints and pages answer is documented for them', async () => {
    const client = await registerClient(t, { trusted: true });
    const seen: [string, string, number][] = [
      ['post', '/token', (await t.http().post('/token').type('form').send('grant_type=authorization_code')).status],
      ['post', '/token', (await t.http().post('/token').set('Content-Type', 'text/plain').send('x')).status],
      ['post', '/revoke', (await t.http().post('/revoke').type('form').send(`client_id=${client.client_id}`)).status],
      ['post', '/introspect', (await t.http().post('/introspect').type('form').send('token=x')).status],
      [
        'get',
        '/authorize',
        (await new Browser(t).get(authorizePath({ response_type: 'code', client_id: 'nobody', redirect_uri: REDIRECT_URI }))).status,
      ],
      [
        'get',
        '/authorize',
        (await new Browser(t).get(authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI })))
          .status,
      ],
      ['post', '/authorize/consent', (await t.http().post('/authorize/consent').type('form').send('decision=allow')).status],
      ['get', '/login', (await t.http().get('/login')).status],
      ['post', '/login', (await t.http().post('/login').type('form').send('email=a@b.c&password=x&csrf=x')).status],
      ['post', '/logout', (await t.http().post('/logout')).status],
      ['get', '/account/apps', (await t.http().get('/account/apps')).status],
      ['post', '/account/apps/revoke', (await t.http().post('/account/apps/revoke').type('form').send('client_id=x&csrf=x')).status],
      ['get', '/api/resource', (await t.http().get('/api/resource')).status],
    ];
    for (const [method, path, status] of seen)
      expect(statuses(method, path), `${method} ${path} answered ${status}`).toContain(String(status));
    expect(new Set(seen.map(([, , status]) => status))).toEqual(new Set([400, 401, 302, 403, 200, 303]));
  });
});
