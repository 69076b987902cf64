import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { orderBody, profileOf, userBody } from '../support/factories';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  authorizePath,
  backChannel,
  basicAuth,
  expectOAuthError,
  parseForm,
  registerClient,
  setCookies,
} from '../support/oauth';
import { expectProblem, expectValidationProblem } from '../support/problem';
import { type TestApp, bearer, createTestApp } from '../support/test-app';
import { SESSION_COOKIE } from '../../src/oauth/interaction/cookies';

const NUL = '\u0000';

/** JSON text of `depth` nested arrays around `inner`. */
function nested(depth: number, inner = '1'): string {
  return `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;
}

/**
 * Inputs found by fuzzing the running service: each must be a clear 4xx, never a 500. The NUL cases matter on
 * PostgreSQL, which refuses NUL in text (SQLite stores it): CI runs this file on both.
 */
describe('hostile input', () => {
  let t: TestApp;
  let admin: UserResponseDto;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    admin = await t.createUser({ role: 'admin' });
    adminToken = await t.token(admin.id);
  });
  afterAll(() => t.close());

  describe('control characters', () => {
    it('GET /authorize with a NUL in client_id: the 400 page of an unknown client', async () => {
      const res = await new Browser(t).get(
        authorizePath({ response_type: 'code', client_id: `a${NUL}b`, redirect_uri: REDIRECT_URI, state: 's' }),
      );
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers.location).toBeUndefined();
    });

    it.each(['/token', '/revoke', '/introspect'] as const)('%s with a NUL in client_id (body): 400 invalid_request', async (path) => {
      const client = await registerClient(t, { trusted: true });
      const res = await backChannel(
        t,
        path,
        { ...client, client_id: `a${NUL}b`, client_secret: undefined },
        { token: 'x', code: 'x' },
        'none',
      );
      expectOAuthError(res, 400, 'invalid_request');
    });

    it.each(['/token', '/revoke', '/introspect'] as const)('%s with a NUL in the Basic client id: 401 invalid_client', async (path) => {
      const res = await t
        .http()
        .post(path)
        .type('form')
        .set('Authorization', basicAuth(`a${NUL}b`, 'secret'))
        .send('grant_type=authorization_code&code=x&token=x');
      expectOAuthError(res, 401, 'invalid_client');
    });

    it('/token with a NUL in redirect_uri or code_verifier: 400 invalid_request', async () => {
      const client = await registerClient(t, { trusted: true });
      for (const form of [
        { grant_type: 'authorization_code', code: 'x', redirect_uri: `${REDIRECT_URI}${NUL}` },
        { grant_type: 'authorization_code', code: 'x', code_verifier: `${'a'.repeat(43)}${NUL}` },
        { grant_type: 'refresh_token', refresh_token: `x${NUL}` },
      ]) {
        expectOAuthError(await backChannel(t, '/token', client, form), 400, 'invalid_request');
      }
    });

    it('POST /login with a NUL in the email: 400 with the form again, no session', async () => {
      const browser = new Browser(t);
      const page = await browser.get('/login');
      const res = await browser.submit(page, { email: `a${NUL}@example.com`, password: 'whatever it is, long' });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(parseForm(res.text).action).toBe('/login');
      expect(setCookies(res).filter((c) => c.startsWith(`${SESSION_COOKIE}=`))).toEqual([]);
      expect(/role="alert"[^>]*>([^<]*)</.exec(res.text)?.[1]).toMatch(/not allowed/);
    });

    it('POST /users with a NUL in name or email: 400 naming the field, nothing created', async () => {
      const body = userBody({ name: `Ann${NUL}`, email: `ann${NUL}@example.com` });
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .send(body);
      const errors = expectValidationProblem(res, '/users', ['email', 'name']);
      expect(errors.name).toMatch(/control characters/);
      expect(errors.email).toMatch(/control characters/);
    });

    it('POST /users with other control characters in name (a line break too): 400 naming the field', async () => {
      for (const name of ['Ann\u0007', 'Ann\u001b[31m', 'Ann\nBob', 'Ann\u007f']) {
        const res = await t
          .http()
          .post('/users')
          .set(...bearer(adminToken))
          .send(userBody({ name }));
        expectValidationProblem(res, '/users', ['name']);
      }
    });

    it('POST /users with an unpaired surrogate (JSON "\\ud83d") in email or name: 400 naming the field, not a 500', async () => {
      const lone = { email: '\\ud83d', name: 'Ann\\udc00' };
      const json = JSON.stringify(userBody({}))
        .replace(/"email":"[^"]*"/, `"email":"${lone.email}"`)
        .replace(/"name":"[^"]*"/, `"name":"${lone.name}"`);
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', 'application/json')
        .send(json);
      const errors = expectValidationProblem(res, '/users', ['email', 'name']);
      expect(errors.email).toMatch(/unpaired surrogate/);
      // A proper pair (an emoji) is text like any other.
      const ok = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .send(userBody({ name: 'Ann \ud83d\ude00' }));
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    });

    it('an undeclared field with a NUL is named once', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .send({ ...userBody(), nickname: `x${NUL}` });
      expectValidationProblem(res, '/users', ['nickname']);
    });

    it('PUT /users/{id} with a NUL in name: 400 naming the field, the profile unchanged', async () => {
      const user = await t.createUser();
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...bearer(adminToken))
        .send(profileOf(user, { name: `Changed${NUL}` }));
      expectValidationProblem(res, `/users/${user.id}`, ['name']);
      const after = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...bearer(adminToken));
      expect(after.body.name).toBe(user.name);
    });

    it('POST /users/{id}/orders with a NUL in item: 400 naming the field, no order', async () => {
      const user = await t.createUser();
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set(...bearer(adminToken))
        .send(orderBody({ item: `Widget${NUL}` }));
      expectValidationProblem(res, `/users/${user.id}/orders`, ['item']);
      const orders = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...bearer(adminToken));
      expect(orders.body.page.total).toBe(0);
    });

    it('GET /users with a NUL in a query parameter: 400 naming it', async () => {
      const res = await t
        .http()
        .get(`/users?gender=female${encodeURIComponent(NUL)}`)
        .set(...bearer(adminToken));
      expectValidationProblem(res, '/users', ['gender']);
    });
  });

  describe('deeply nested JSON', () => {
    it('a body nested 1,400 levels deep (under 3 kB) is 400 before validation', async () => {
      const text = `{"name":${nested(1400)}}`;
      expect(text.length).toBeLessThan(3000);
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', 'application/json')
        .send(text);
      expectProblem(res, 400, '/users');
      expect(res.body.detail).toMatch(/nested deeper than 32 levels/);
    });

    it('33 levels are refused; 32 reach validation; brackets inside strings do not count', async () => {
      const send = (text: string) =>
        t
          .http()
          .post('/users')
          .set(...bearer(adminToken))
          .set('Content-Type', 'application/json')
          .send(text);
      const tooDeep = await send(`{"name":${nested(32)}}`);
      expectProblem(tooDeep, 400, '/users');
      expect(tooDeep.body.detail).toMatch(/nested deeper/);
      expectValidationProblem(await send(`{"name":${nested(31)}}`), '/users', ['email', 'password', 'name', 'gender', 'age']);
      const bracketsInName = JSON.stringify(userBody({ name: `[{"\\${'['.repeat(60)}` }));
      expect((await send(bracketsInName)).status).toBe(201);
    });
  });
});
