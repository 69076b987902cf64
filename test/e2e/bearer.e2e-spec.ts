import { createHmac, createPublicKey, randomUUID } from 'node:crypto';
import { type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { expectProblem } from '../support/problem';
import { ALL_SCOPES, type TestApp, createTestApp } from '../support/test-app';
import { orderBody, profileOf } from '../support/factories';
import {
  b64url,
  backChannel,
  bearerChallenge,
  decodeJwt,
  genuineClaims,
  issueTokens,
  NO_RATE_LIMITS,
  publishedJwks,
  signWithForeignKey,
  signWithServiceKey,
} from '../support/oauth';

const REALM = 'realm="api"';
/** The challenge without a token on the caller's own record (GET /users/{id}), which needs users:read. */
const REALM_USERS_READ = 'realm="api", scope="users:read"';
const INVALID_TOKEN = 'error="invalid_token"';
const INVALID_REQUEST = 'error="invalid_request"';

describe('bearer tokens at the resource server (RFC 6750, RFC 9068)', () => {
  let t: TestApp;
  let user: UserResponseDto;
  let other: UserResponseDto;
  let jwk: JWK;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    user = await t.createUser();
    other = await t.createUser();
    [jwk] = await publishedJwks(t);
  });
  afterAll(() => t.close());

  /** A protected route of the caller's own: 200 with a good token, so any other answer is the token's fault. */
  const ownPath = () => `/users/${user.id}`;

  async function expectInvalidToken(token: string, path = ownPath()): Promise<void> {
    const res = await t.http().get(path).set('Authorization', `Bearer ${token}`);
    expectProblem(res, 401, path);
    expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_TOKEN));
  }

  async function expectAccepted(token: string): Promise<void> {
    const res = await t.http().get(ownPath()).set('Authorization', `Bearer ${token}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.id).toBe(user.id);
  }

  describe('no credentials', () => {
    it.each([
      ['GET', '/api/resource', ''],
      ['GET', '/users', 'users:read'],
      ['GET', '/users/{self}', 'users:read'],
      ['PUT', '/users/{self}', 'users:write'],
      ['DELETE', '/users/{self}', 'users:write'],
      ['POST', '/users', 'users:write'],
      ['GET', '/users/{self}/orders', 'orders:read'],
      ['POST', '/users/{self}/orders', 'orders:write'],
      ['GET', '/users/{self}/orders/{random}', 'orders:read'],
    ])(
      'answers %s %s without Authorization with 401 and WWW-Authenticate: Bearer realm="api", scope="%s"',
      async (method, template, scope) => {
        const path = template.replace('{self}', user.id).replace('{random}', randomUUID());
        const res = await t.http()[method.toLowerCase() as 'get'](path);
        expectProblem(res, 401, path);
        // The scope the route needs, so that a client asks for it first; GET /api/resource takes any token.
        expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, scope ? `${REALM}, scope="${scope}"` : REALM));
      },
    );

    it('treats another authentication scheme as no bearer credentials (401 realm="api")', async () => {
      const res = await t.http().get(ownPath()).set('Authorization', 'Basic dXNlcjpwYXNzd29yZA==');
      expectProblem(res, 401, ownPath());
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, REALM_USERS_READ));
    });

    it('treats a scheme that only starts with Bearer (no space before the token) as another scheme (401 realm="api")', async () => {
      const token = await t.token(user.id);
      for (const header of [`Bearer${token}`, `Bearer.${token}`, `XBearer ${token}`]) {
        const res = await t.http().get(ownPath()).set('Authorization', header);
        expectProblem(res, 401, ownPath());
        expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, REALM_USERS_READ));
      }
    });

    it('ignores a token sent only in the query string (401 as if absent)', async () => {
      const token = await t.token(user.id);
      const res = await t.http().get(`${ownPath()}?access_token=${token}`);
      expectProblem(res, 401, ownPath());
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, REALM_USERS_READ));
    });

    it('ignores a token sent only in a form body (401 as if absent)', async () => {
      const token = await t.token(user.id);
      const path = `/users/${user.id}/orders`;
      const res = await t
        .http()
        .post(path)
        .type('form')
        .send({ access_token: token, item: 'x', quantity: '1', unitPriceCents: '1', currency: 'EUR' });
      expectProblem(res, 401, path);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, `${REALM}, scope="orders:write"`));
    });
  });

  describe('malformed requests (400 invalid_request)', () => {
    it.each(['Bearer', 'Bearer ', 'Bearer    ', 'bearer'])(
      'answers Authorization "%s" (no token) with 400 invalid_request',
      async (header) => {
        const res = await t.http().get(ownPath()).set('Authorization', header);
        expectProblem(res, 400, ownPath());
        expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_REQUEST));
      },
    );

    it('answers a token sent in the header and in the query string with 400 invalid_request', async () => {
      const token = await t.token(user.id);
      const res = await t.http().get(`${ownPath()}?access_token=${token}`).set('Authorization', `Bearer ${token}`);
      expectProblem(res, 400, ownPath());
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_REQUEST));
    });

    it('answers a token sent in the header and in a form body with 400 invalid_request, and creates nothing', async () => {
      const token = await t.token(user.id);
      const path = `/users/${user.id}/orders`;
      const res = await t
        .http()
        .post(path)
        .set('Authorization', `Bearer ${token}`)
        .type('form')
        .send({ access_token: token, item: 'x', quantity: '1', unitPriceCents: '1', currency: 'EUR' });
      expectProblem(res, 400, path);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_REQUEST));
      const list = await t.http().get(path).set('Authorization', `Bearer ${token}`);
      expect(list.body.page.total).toBe(0);
    });

    it('answers a good header token plus an empty access_token query parameter with 400 invalid_request', async () => {
      const token = await t.token(user.id);
      const res = await t.http().get(`${ownPath()}?access_token=`).set('Authorization', `Bearer ${token}`);
      expectProblem(res, 400, ownPath());
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_REQUEST));
    });
  });

  describe('the scheme name', () => {
    it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('accepts the scheme written %s', async (scheme) => {
      const token = await t.token(user.id);
      const res = await t.http().get(ownPath()).set('Authorization', `${scheme} ${token}`);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(user.id);
    });

    // Decided edge cases (docs/decisions.md): RFC 6750 2.1 allows `1*SP` after the scheme, so several spaces or a tab are
    // accepted; a value with whitespace inside it is not one b64token, so the header is malformed.
    it.each([
      ['two spaces', 'Bearer  '],
      ['a tab', 'Bearer\t'],
    ])('accepts the scheme followed by %s', async (_, prefix) => {
      const token = await t.token(user.id);
      const res = await t.http().get(ownPath()).set('Authorization', `${prefix}${token}`);
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(user.id);
    });

    it('answers a value with inner whitespace ("Bearer a b", or a token and a word) with 400 invalid_request', async () => {
      const token = await t.token(user.id);
      for (const header of ['Bearer a b', `Bearer ${token} extra`]) {
        const res = await t.http().get(ownPath()).set('Authorization', header);
        expectProblem(res, 400, ownPath());
        expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_REQUEST));
      }
    });
  });

  describe('tokens that are not valid (401 invalid_token)', () => {
    it.each([
      ['a word', 'garbage'],
      ['three dotted parts', 'aaa.bbb.ccc'],
      ['characters outside b64token', 'abc$def!'],
      ['a JSON object', '{"sub":"x"}'],
      ['a 10 kB string', 'x'.repeat(10_000)],
    ])('rejects %s', async (_label, token) => {
      await expectInvalidToken(token);
    });

    it('rejects a token whose payload was altered after signing', async () => {
      const token = await t.token(user.id, ['orders:read']);
      const { header, payload, parts } = decodeJwt(token);
      const widened = `${b64url(header)}.${b64url({ ...payload, scope: ALL_SCOPES.join(' ') })}.${parts[2]}`;
      await expectInvalidToken(widened);
      const impersonating = `${parts[0]}.${b64url({ ...payload, sub: other.id, scope: 'users:read' })}.${parts[2]}`;
      await expectInvalidToken(impersonating, `/users/${other.id}`);
    });

    it('rejects a token whose signature was altered', async () => {
      const [h, p, s] = (await t.token(user.id)).split('.');
      const flipped = s[10] === 'A' ? 'B' : 'A';
      await expectInvalidToken(`${h}.${p}.${s.slice(0, 10)}${flipped}${s.slice(11)}`);
      await expectInvalidToken(`${h}.${p}.`);
      await expectInvalidToken(`${h}.${p}`);
    });

    it('rejects alg "none" (unsigned) tokens', async () => {
      const claims = genuineClaims(t, user.id);
      for (const alg of ['none', 'None', 'NONE']) {
        const header = { alg, typ: 'at+jwt', kid: jwk.kid };
        await expectInvalidToken(`${b64url(header)}.${b64url(claims)}.`);
      }
    });

    it('rejects HS256 tokens signed with the published public key as the HMAC secret', async () => {
      const claims = genuineClaims(t, user.id);
      const pem = createPublicKey({ key: jwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
      const der = createPublicKey({ key: jwk as never, format: 'jwk' }).export({ type: 'spki', format: 'der' });
      for (const secret of [Buffer.from(pem), Buffer.from(JSON.stringify(jwk)), der]) {
        const token = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: jwk.kid })
          .sign(new Uint8Array(secret));
        await expectInvalidToken(token);
      }
      // The same attack built by hand, in case a library refused to sign with such a key.
      const header = b64url({ alg: 'HS256', typ: 'at+jwt', kid: jwk.kid });
      const body = b64url(claims);
      const mac = createHmac('sha256', pem).update(`${header}.${body}`).digest('base64url');
      await expectInvalidToken(`${header}.${body}.${mac}`);
    });

    it('rejects a token signed by a key the service never published, whatever kid it names', async () => {
      const claims = genuineClaims(t, user.id);
      await expectInvalidToken(await signWithForeignKey(claims, 'unknown-kid'));
      await expectInvalidToken(await signWithForeignKey(claims, jwk.kid as string));
    });

    it('rejects a token signed by the service key but naming an unknown kid, or none', async () => {
      const claims = genuineClaims(t, user.id);
      await expectInvalidToken(await signWithServiceKey(t, claims, { kid: 'no-such-key' }));
      await expectInvalidToken(await signWithServiceKey(t, claims, { kid: undefined }));
    });

    // From here on the tokens are signed with the service's own active key (see signWithServiceKey): the signature
    // is genuine, so each rejection can only come from the claim or header check the test names.
    it('accepts a token built by hand like the token service builds it (control for the tests below)', async () => {
      await expectAccepted(await signWithServiceKey(t, genuineClaims(t, user.id)));
    });

    it.each(['JWT', 'jwt', 'at+JWT+x', 'application/jwt'])('rejects typ "%s" (must be at+jwt)', async (typ) => {
      await expectInvalidToken(await signWithServiceKey(t, genuineClaims(t, user.id), { typ }));
    });

    it('rejects a token without typ', async () => {
      await expectInvalidToken(await signWithServiceKey(t, genuineClaims(t, user.id), { typ: undefined }));
    });

    it('accepts typ "application/at+jwt", the full media type RFC 9068 allows', async () => {
      await expectAccepted(await signWithServiceKey(t, genuineClaims(t, user.id), { typ: 'application/at+jwt' }));
    });

    it.each(['RS384', 'RS512', 'PS256'])('rejects a token signed by the service key with %s (only RS256 is accepted)', async (alg) => {
      await expectInvalidToken(await signWithServiceKey(t, genuineClaims(t, user.id), { alg }));
    });

    it('rejects a token for another audience', async () => {
      for (const aud of ['https://other-api.example', `${t.config.audience}/`, [`https://other-api.example`]]) {
        await expectInvalidToken(await signWithServiceKey(t, genuineClaims(t, user.id, { aud })));
      }
    });

    it('accepts a token whose aud array contains this audience', async () => {
      await expectAccepted(
        await signWithServiceKey(t, genuineClaims(t, user.id, { aud: ['https://other-api.example', t.config.audience] })),
      );
    });

    it('rejects a token from another issuer', async () => {
      for (const iss of ['https://evil.example', `${t.config.issuer}/`, t.config.issuer.toUpperCase()]) {
        await expectInvalidToken(await signWithServiceKey(t, genuineClaims(t, user.id, { iss })));
      }
    });

    it.each(['iss', 'aud', 'exp', 'sub'])('rejects a token without %s', async (claim) => {
      const claims = genuineClaims(t, user.id);
      delete claims[claim];
      await expectInvalidToken(await signWithServiceKey(t, claims));
    });

    it('accepts a token that expired 20 seconds ago (30 seconds of clock skew)', async () => {
      const now = Math.floor(Date.now() / 1000);
      await expectAccepted(await signWithServiceKey(t, genuineClaims(t, user.id, { iat: now - 920, exp: now - 20 })));
    });

    it('rejects a token that expired 40 seconds ago', async () => {
      const now = Math.floor(Date.now() / 1000);
      await expectInvalidToken(await signWithServiceKey(t, genuineClaims(t, user.id, { iat: now - 940, exp: now - 40 })));
    });

    it('rejects a token whose grant was revoked at POST /revoke', async () => {
      const issued = await issueTokens(t, { user });
      await expectAccepted(issued.access);
      const revoke = await backChannel(t, '/revoke', issued.client, { token: issued.refresh, token_type_hint: 'refresh_token' });
      expect(revoke.status).toBe(200);
      await expectInvalidToken(issued.access);
      await expectInvalidToken(issued.access, '/api/resource');
    });

    it('rejects a bad token with 401 before looking at a malformed id (the token is checked first)', async () => {
      const res = await t.http().get('/users/not-a-uuid').set('Authorization', 'Bearer garbage');
      expectProblem(res, 401, '/users/not-a-uuid');
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, INVALID_TOKEN));
    });
  });

  describe('several applications in one process (passport keeps one `bearer` strategy per process)', () => {
    it("verifies each application's tokens with its own keys, whichever application was created last", async () => {
      const second = await createTestApp(NO_RATE_LIMITS);
      try {
        const mine = await issueTokens(t, { user });
        const theirs = await issueTokens(second);
        // Each application accepts its own token ...
        await expectAccepted(mine.access);
        const own = await second.http().get('/api/resource').set('Authorization', `Bearer ${theirs.access}`);
        expect(own.status).toBe(200);
        // ... and refuses the other's, signed by keys it never published.
        await expectInvalidToken(theirs.access, '/api/resource');
        const foreign = await second.http().get('/api/resource').set('Authorization', `Bearer ${mine.access}`);
        expectProblem(foreign, 401, '/api/resource');
        expect(foreign.headers['www-authenticate']).toBe(bearerChallenge(second, INVALID_TOKEN));
      } finally {
        await second.close();
      }
    });
  });

  describe('scopes (403 insufficient_scope), checked before ownership', () => {
    async function expectInsufficient(
      method: 'get' | 'post' | 'put' | 'delete',
      path: string,
      token: string,
      scope: string,
      body?: object,
    ) {
      let req = t.http()[method](path).set('Authorization', `Bearer ${token}`);
      if (body) req = req.send(body);
      const res = await req;
      expectProblem(res, 403, path);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, `error="insufficient_scope", scope="${scope}"`));
    }

    it("answers 403, not 404, for another user's record when the token lacks users:read", async () => {
      const token = await t.token(user.id, ['orders:read', 'orders:write', 'users:write']);
      await expectInsufficient('get', `/users/${other.id}`, token, 'users:read');
      await expectInsufficient('get', `/users/${randomUUID()}`, token, 'users:read');
    });

    it("answers 403, not 404, for another user's orders when the token lacks orders:read", async () => {
      const token = await t.token(user.id, ['users:read', 'users:write', 'orders:write']);
      await expectInsufficient('get', `/users/${other.id}/orders`, token, 'orders:read');
      await expectInsufficient('get', `/users/${other.id}/orders/${randomUUID()}`, token, 'orders:read');
    });

    it("answers 403, not 404, when creating an order under another user's path without orders:write", async () => {
      const token = await t.token(user.id, ['orders:read']);
      await expectInsufficient('post', `/users/${other.id}/orders`, token, 'orders:write', orderBody());
    });

    it("answers 403, not 404, when updating another user's record without users:write", async () => {
      const token = await t.token(user.id, ['users:read']);
      await expectInsufficient('put', `/users/${other.id}`, token, 'users:write', profileOf(other));
    });

    it('checks the scope before the input: a malformed id or body with a missing scope is 403, not 400', async () => {
      const token = await t.token(user.id, ['orders:read']);
      await expectInsufficient('get', '/users/not-a-uuid', token, 'users:read');
      await expectInsufficient('post', `/users/${user.id}/orders`, token, 'orders:write', { nonsense: true });
    });

    it('matches scopes exactly: users:readx or USERS:READ does not grant users:read', async () => {
      for (const scope of ['users:readx', 'USERS:READ', 'users:rea', 'users', '']) {
        const token = await t.token(user.id, scope);
        await expectInsufficient('get', ownPath(), token, 'users:read');
      }
    });

    it('lets a token with an empty scope reach a route that needs no scope', async () => {
      const token = await t.token(user.id, '');
      const res = await t.http().get('/api/resource').set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(200);
      expect(res.body.data.scope).toBe('');
    });
  });
});
