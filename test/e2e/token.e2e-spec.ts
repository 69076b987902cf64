import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { RefreshToken } from '../../src/oauth/entities/refresh-token.entity';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  authorizeCode,
  basicAuth,
  expectOAuthError,
  issueTokens,
  percentEncodeAll,
  pkcePair,
  registerClient,
  resourceStatus,
  signedIn,
  sleep,
  token,
} from '../support/oauth';
import { type TestApp, createTestApp, createTwoInstances } from '../support/test-app';

const ACCESS_TOKEN_TTL = 600;

describe('POST /token', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, ACCESS_TOKEN_TTL: String(ACCESS_TOKEN_TTL) });
  });
  afterAll(() => t.close());

  /** A trusted confidential client, a signed-in user and a fresh code with PKCE. */
  async function codeWithPkce(opts: { client?: ClientView; browser?: Browser; scope?: string } = {}) {
    const client = opts.client ?? (await registerClient(t, { trusted: true }));
    const s = opts.browser ? { browser: opts.browser, user: undefined } : await signedIn(t);
    const pkce = pkcePair();
    const code = await authorizeCode(s.browser, client, {
      redirect_uri: REDIRECT_URI,
      scope: opts.scope,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    return { client, code, verifier: pkce.verifier, browser: s.browser, user: s.user };
  }

  function redeem(client: ClientView, code: string, verifier: string | undefined, extra: Record<string, string | undefined> = {}) {
    return token(t, client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, ...extra });
  }

  describe('grant_type=authorization_code', () => {
    it('answers 200 with exactly access_token, token_type Bearer, expires_in = ACCESS_TOKEN_TTL, refresh_token and scope, not cacheable', async () => {
      const { client, code, verifier } = await codeWithPkce({ scope: 'orders:read users:read' });
      const res = await redeem(client, code, verifier);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
      expect(res.body.token_type).toBe('Bearer');
      expect(res.body.expires_in).toBe(ACCESS_TOKEN_TTL);
      expect(res.body.scope).toBe('orders:read users:read');
      expect(res.body.access_token).toEqual(expect.any(String));
      expect(res.body.refresh_token).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    });

    it('gives no refresh token to a client not allowed the refresh_token grant, stores none, and stores the redemption event once', async () => {
      const client = await registerClient(t, { trusted: true, grantTypes: ['authorization_code'] });
      const { code, verifier } = await codeWithPkce({ client });
      const res = await redeem(client, code, verifier);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
      const dataSource = t.app.get(DataSource);
      expect(await dataSource.getRepository(RefreshToken).countBy({ clientId: client.client_id })).toBe(0);
      expect(await dataSource.getRepository(AuditEvent).countBy({ clientId: client.client_id, type: 'code.redeemed' })).toBe(1);
    });

    it('issues an RFC 9068 access token (typ at+jwt, RS256, kid) that verifies against the published JWKS with every claim', async () => {
      const { client, code, verifier, user } = await codeWithPkce({ scope: 'orders:write' });
      const res = await redeem(client, code, verifier);
      const accessToken = res.body.access_token as string;
      const header = decodeProtectedHeader(accessToken);
      expect(header.typ).toBe('at+jwt');
      expect(header.alg).toBe('RS256');
      expect(header.kid).toEqual(expect.any(String));

      const jwks = await t.http().get('/.well-known/jwks.json');
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);
      for (const key of jwks.body.keys) expect(key.d).toBeUndefined();
      const { payload } = await jwtVerify(accessToken, createLocalJWKSet(jwks.body), {
        algorithms: ['RS256'],
        typ: 'at+jwt',
        issuer: t.config.issuer,
        audience: t.config.audience,
        requiredClaims: ['iss', 'sub', 'aud', 'client_id', 'scope', 'iat', 'exp', 'jti'],
      });
      expect(payload.sub).toBe(user!.id);
      expect(payload.client_id).toBe(client.client_id);
      expect(payload.scope).toBe('orders:write');
      expect(payload.exp! - payload.iat!).toBe(ACCESS_TOKEN_TTL);
      expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(30);
      expect(payload.jti).toEqual(expect.stringMatching(/\S/));

      const resource = await t.http().get('/api/resource').set('Authorization', `Bearer ${accessToken}`);
      expect(resource.status).toBe(200);
      expect(resource.body.data).toMatchObject({ sub: user!.id, client_id: client.client_id, scope: 'orders:write' });
    });

    it('stores codes, refresh tokens and client secrets only as hashes', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const res = await redeem(client, code, verifier);
      const db = t.app.get(DataSource);
      const stored = JSON.stringify([
        await db.query('SELECT * FROM authorization_codes'),
        await db.query('SELECT * FROM refresh_tokens'),
        await db.query('SELECT * FROM clients'),
      ]);
      expect(stored).toContain(client.client_id);
      for (const secret of [code, res.body.refresh_token, client.client_secret!]) expect(stored).not.toContain(secret);
    });

    it('generates client secrets of at least 256 bits, base64url', async () => {
      const client = await registerClient(t);
      expect(client.client_secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    });

    it('publishes 2048-bit RSA keys', async () => {
      const jwks = await t.http().get('/.well-known/jwks.json');
      for (const key of jwks.body.keys) {
        expect(key.kty).toBe('RSA');
        expect(Buffer.from(key.n, 'base64url').length * 8).toBeGreaterThanOrEqual(2048);
      }
    });

    it('answers 400 invalid_request to a body that is not application/x-www-form-urlencoded', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const json = await t
        .http()
        .post('/token')
        .set('Authorization', basicAuth(client.client_id, client.client_secret!))
        .send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
      expectOAuthError(json, 400, 'invalid_request');
      const text = await t
        .http()
        .post('/token')
        .set('Authorization', basicAuth(client.client_id, client.client_secret!))
        .set('Content-Type', 'text/plain')
        .send(`grant_type=authorization_code&code=${code}`);
      expectOAuthError(text, 400, 'invalid_request');
      const none = await t.http().post('/token').set('Authorization', basicAuth(client.client_id, client.client_secret!));
      expectOAuthError(none, 400, 'invalid_request');
    });

    it('authenticates client_secret_basic with form-URL-encoded credentials (RFC 6749 2.3.1)', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const credentials = `${percentEncodeAll(client.client_id)}:${percentEncodeAll(client.client_secret!)}`;
      const res = await t
        .http()
        .post('/token')
        .set('Authorization', `Basic ${Buffer.from(credentials).toString('base64')}`)
        .type('form')
        .send({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    });

    it('authenticates client_secret_post', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const res = await token(
        t,
        client,
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        'post',
      );
      expect(res.status).toBe(200);
    });

    it('answers invalid_request to Basic credentials and a client_secret in the body at once', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const res = await redeem(client, code, verifier, { client_secret: client.client_secret });
      expectOAuthError(res, 400, 'invalid_request');
    });

    it('answers 401 invalid_client with a Basic challenge to a wrong secret sent with Basic', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const res = await token(
        t,
        { ...client, client_secret: `${client.client_secret}x` },
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        },
      );
      expectOAuthError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toMatch(/^Basic\b/);
      // The code was not touched: the real client can still redeem it.
      expect((await redeem(client, code, verifier)).status).toBe(200);
    });

    it('answers 401 invalid_client without a Basic challenge to a wrong secret sent in the body', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const res = await token(
        t,
        { ...client, client_secret: 'not-the-secret' },
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        'post',
      );
      expectOAuthError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toBeUndefined();
    });

    it('answers 401 invalid_client to a confidential client that does not authenticate, and to an unknown client', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const unauthenticated = await token(
        t,
        client,
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        'none',
      );
      expectOAuthError(unauthenticated, 401, 'invalid_client');
      const unknown = await token(t, { ...client, client_id: 'no-such-client' }, { grant_type: 'authorization_code', code });
      expectOAuthError(unknown, 401, 'invalid_client');
      expect(unknown.headers['www-authenticate']).toMatch(/^Basic\b/);
    });

    it('lets a public client redeem with PKCE and only its client_id, and refresh the same way', async () => {
      const client = await registerClient(t, { isPublic: true, trusted: true });
      expect(client.client_secret).toBeUndefined();
      const { code, verifier } = await codeWithPkce({ client });
      const res = await token(
        t,
        client,
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        'none',
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token }, 'none');
      expect(refreshed.status).toBe(200);
    });

    it('answers invalid_client to a public client that sends a secret', async () => {
      const client = await registerClient(t, { isPublic: true, trusted: true });
      const { code, verifier } = await codeWithPkce({ client });
      const res = await token(
        t,
        { ...client, client_secret: 'made-up' },
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
        'post',
      );
      expectOAuthError(res, 401, 'invalid_client');
    });

    it('rejects a code presented twice with invalid_grant and revokes the tokens of its first use', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const first = await redeem(client, code, verifier);
      expect(first.status).toBe(200);
      expect(await resourceStatus(t, first.body.access_token)).toBe(200);

      expectOAuthError(await redeem(client, code, verifier), 400, 'invalid_grant');
      expect(await resourceStatus(t, first.body.access_token)).toBe(401);
      const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token });
      expectOAuthError(refreshed, 400, 'invalid_grant');
    });

    it('rejects the code of client A presented by client B with invalid_grant', async () => {
      const { code, verifier } = await codeWithPkce();
      const other = await registerClient(t, { trusted: true });
      expectOAuthError(await redeem(other, code, verifier), 400, 'invalid_grant');
    });

    it('rejects a wrong code_verifier with invalid_grant and consumes the code', async () => {
      const { client, code, verifier } = await codeWithPkce();
      expectOAuthError(await redeem(client, code, pkcePair().verifier), 400, 'invalid_grant');
      expectOAuthError(await redeem(client, code, verifier), 400, 'invalid_grant');
    });

    it('rejects a missing code_verifier with invalid_request when a challenge was sent, and consumes the code', async () => {
      const { client, code, verifier } = await codeWithPkce();
      expectOAuthError(await redeem(client, code, undefined), 400, 'invalid_request');
      expectOAuthError(await redeem(client, code, verifier), 400, 'invalid_grant');
    });

    it('rejects a malformed code_verifier with invalid_request', async () => {
      const { client, code } = await codeWithPkce();
      expectOAuthError(await redeem(client, code, 'short'), 400, 'invalid_request');
    });

    it('rejects a code_verifier for a code issued without a challenge with invalid_request (PKCE downgrade)', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const code = await authorizeCode(browser, client, { redirect_uri: REDIRECT_URI });
      expectOAuthError(await redeem(client, code, pkcePair().verifier), 400, 'invalid_request');
    });

    it('redeems a code issued without a challenge for a confidential client without code_verifier', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const code = await authorizeCode(browser, client, { redirect_uri: REDIRECT_URI });
      expect((await redeem(client, code, undefined)).status).toBe(200);
    });

    it('rejects a redirect_uri that differs from the one sent to /authorize with invalid_grant', async () => {
      const client = await registerClient(t, { trusted: true, redirectUris: [REDIRECT_URI, 'https://client.example/other'] });
      const { code, verifier } = await codeWithPkce({ client });
      expectOAuthError(await redeem(client, code, verifier, { redirect_uri: 'https://client.example/other' }), 400, 'invalid_grant');
    });

    it('rejects a missing redirect_uri when one was sent to /authorize with invalid_request', async () => {
      const { client, code, verifier } = await codeWithPkce();
      expectOAuthError(await redeem(client, code, verifier, { redirect_uri: undefined }), 400, 'invalid_request');
    });

    it('accepts a code without redirect_uri when none was sent to /authorize', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const pkce = pkcePair();
      const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
      expect((await redeem(client, code, pkce.verifier, { redirect_uri: undefined })).status).toBe(200);
    });

    it('rejects an unknown code with invalid_grant and a missing one with invalid_request', async () => {
      const client = await registerClient(t, { trusted: true });
      expectOAuthError(await redeem(client, 'no-such-code-at-all-here-000000', undefined), 400, 'invalid_grant');
      expectOAuthError(await redeem(client, undefined as unknown as string, undefined), 400, 'invalid_request');
    });

    it('rejects a repeated parameter with invalid_request', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const res = await t
        .http()
        .post('/token')
        .set('Authorization', basicAuth(client.client_id, client.client_secret!))
        .type('form')
        .send(
          `grant_type=authorization_code&code=${code}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&code_verifier=${verifier}&code_verifier=${verifier}`,
        );
      expectOAuthError(res, 400, 'invalid_request');
    });

    it('keeps error_description within the characters RFC 6749 allows when it echoes a parameter name', async () => {
      const client = await registerClient(t, { trusted: true });
      const name = encodeURIComponent('p"\\\u00e9\n');
      const res = await t
        .http()
        .post('/token')
        .set('Authorization', basicAuth(client.client_id, client.client_secret!))
        .type('form')
        .send(`grant_type=authorization_code&code=x&${name}=1&${name}=2`);
      expectOAuthError(res, 400, 'invalid_request');
    });

    it('answers malformed client credentials and oversized bodies with an RFC 6749 error, never a 500', async () => {
      const b64 = (v: string) => Buffer.from(v).toString('base64');
      for (const header of ['Basic !!!', `Basic ${b64('no-colon')}`, `Basic ${b64('%ZZ:%ZZ')}`, 'Bearer abc', 'Basic']) {
        const res = await t.http().post('/token').set('Authorization', header).type('form').send('grant_type=authorization_code&code=x');
        expectOAuthError(res, 401, 'invalid_client');
      }
      const big = await t
        .http()
        .post('/token')
        .type('form')
        .send(`grant_type=authorization_code&code=${'x'.repeat(200_000)}`);
      expect(big.status).toBe(413);
      expect(big.body.error).toBe('invalid_request');
    });

    it('accepts a registered redirect_uri at the token endpoint when none was sent to /authorize, and no other', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const first = await authorizeCode(browser, client, {});
      expect((await redeem(client, first, undefined)).status).toBe(200);
      const second = await authorizeCode(browser, client, {});
      expectOAuthError(await redeem(client, second, undefined, { redirect_uri: 'https://client.example/other' }), 400, 'invalid_grant');
    });

    it('stores no refresh token for a redemption it refuses', async () => {
      // Two redirect URIs (a code must name one) and one (a code may name none).
      const client = await registerClient(t, { trusted: true, redirectUris: [REDIRECT_URI, 'https://client.example/other'] });
      const single = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const refused: [ClientView, string, Record<string, string | undefined>, number, string][] = [];
      const withPkce = async () => {
        const pkce = pkcePair();
        const code = await authorizeCode(browser, client, {
          redirect_uri: REDIRECT_URI,
          code_challenge: pkce.challenge,
          code_challenge_method: 'S256',
        });
        return { code, verifier: pkce.verifier };
      };
      let c = await withPkce();
      refused.push([client, c.code, { code_verifier: pkcePair().verifier }, 400, 'invalid_grant']);
      c = await withPkce();
      refused.push([client, c.code, { code_verifier: undefined }, 400, 'invalid_request']);
      c = await withPkce();
      refused.push([client, c.code, { code_verifier: c.verifier, redirect_uri: 'https://client.example/other' }, 400, 'invalid_grant']);
      c = await withPkce();
      refused.push([client, c.code, { code_verifier: c.verifier, redirect_uri: undefined }, 400, 'invalid_request']);
      const noChallenge = await authorizeCode(browser, single, {});
      refused.push([single, noChallenge, { code_verifier: pkcePair().verifier, redirect_uri: undefined }, 400, 'invalid_request']);
      const noRedirect = await authorizeCode(browser, single, {});
      refused.push([single, noRedirect, { redirect_uri: 'https://elsewhere.example/cb' }, 400, 'invalid_grant']);
      for (const [to, code, params, status, error] of refused) {
        expectOAuthError(await redeem(to, code, undefined, params), status, error);
      }
      const refreshTokens = t.app.get(DataSource).getRepository(RefreshToken);
      expect(await refreshTokens.countBy({ clientId: client.client_id })).toBe(0);
      expect(await refreshTokens.countBy({ clientId: single.client_id })).toBe(0);
    });

    it('redeems exactly once when 20 redemptions of one code arrive at the same time', async () => {
      const { client, code, verifier } = await codeWithPkce();
      const answers = await Promise.all(Array.from({ length: 20 }, () => redeem(client, code, verifier)));
      const winners = answers.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      for (const res of answers.filter((r) => r.status !== 200)) expectOAuthError(res, 400, 'invalid_grant');
      // The other 19 were replays of a used code: the tokens of its one redemption are revoked.
      expect(await resourceStatus(t, winners[0].body.access_token)).toBe(401);
      const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: winners[0].body.refresh_token });
      expectOAuthError(refreshed, 400, 'invalid_grant');
    });
  });

  describe('grant_type', () => {
    it('answers unsupported_grant_type to password and implicit, and unauthorized_client to a grant this client may not use', async () => {
      const client = await registerClient(t, { trusted: true });
      expectOAuthError(await token(t, client, { grant_type: 'client_credentials' }), 400, 'unauthorized_client');
      // The device grant is supported (RFC 8628), but this client was not registered for it.
      expectOAuthError(await token(t, client, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code' }), 400, 'unauthorized_client');
      for (const grantType of ['password', 'implicit', 'CLIENT_CREDENTIALS']) {
        expectOAuthError(await token(t, client, { grant_type: grantType }), 400, 'unsupported_grant_type');
      }
    });

    it('answers invalid_request when grant_type is missing', async () => {
      const client = await registerClient(t, { trusted: true });
      expectOAuthError(await token(t, client, {}), 400, 'invalid_request');
    });
  });

  describe('grant_type=refresh_token', () => {
    function refresh(client: ClientView, refreshToken: string, extra: Record<string, string> = {}) {
      return token(t, client, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });
    }

    it('rotates: returns a new refresh token and access token, with the same success format', async () => {
      const first = await issueTokens(t, { scope: 'orders:read orders:write' });
      const res = await refresh(first.client, first.refresh);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
      expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL, scope: 'orders:read orders:write' });
      expect(res.body.refresh_token).not.toBe(first.refresh);
      expect(res.body.access_token).not.toBe(first.access);
      expect(await resourceStatus(t, res.body.access_token)).toBe(200);
      expect((await refresh(first.client, res.body.refresh_token)).status).toBe(200);
    });

    it('answers invalid_grant to a rotated refresh token and revokes the whole family, the newest refresh and access tokens included', async () => {
      const first = await issueTokens(t);
      const second = await refresh(first.client, first.refresh);
      const third = await refresh(first.client, second.body.refresh_token);
      expect(third.status).toBe(200);
      expect(await resourceStatus(t, third.body.access_token)).toBe(200);

      expectOAuthError(await refresh(first.client, first.refresh), 400, 'invalid_grant');
      expectOAuthError(await refresh(first.client, third.body.refresh_token), 400, 'invalid_grant');
      expect(await resourceStatus(t, third.body.access_token)).toBe(401);
      expect(await resourceStatus(t, second.body.access_token)).toBe(401);
      expect(await resourceStatus(t, first.access)).toBe(401);
    });

    it('narrows the scope on request, and a later refresh without scope gets the originally granted scope', async () => {
      const first = await issueTokens(t, { scope: 'orders:read orders:write users:read' });
      const narrowed = await refresh(first.client, first.refresh, { scope: 'orders:read' });
      expect(narrowed.status).toBe(200);
      expect(narrowed.body.scope).toBe('orders:read');
      const resource = await t.http().get('/api/resource').set('Authorization', `Bearer ${narrowed.body.access_token}`);
      expect(resource.body.data.scope).toBe('orders:read');
      const full = await refresh(first.client, narrowed.body.refresh_token);
      expect(full.body.scope.split(' ').sort()).toEqual(['orders:read', 'orders:write', 'users:read']);
    });

    it('answers invalid_scope to a scope beyond the grant and keeps the refresh token usable', async () => {
      const first = await issueTokens(t, { scope: 'orders:read' });
      expectOAuthError(await refresh(first.client, first.refresh, { scope: 'orders:read users:write' }), 400, 'invalid_scope');
      expectOAuthError(await refresh(first.client, first.refresh, { scope: 'no-such-scope' }), 400, 'invalid_scope');
      expect((await refresh(first.client, first.refresh)).status).toBe(200);
    });

    it('answers invalid_grant to a refresh token of another client, which keeps working for its own client', async () => {
      const first = await issueTokens(t);
      const other = await registerClient(t, { trusted: true });
      expectOAuthError(await refresh(other, first.refresh), 400, 'invalid_grant');
      expect((await refresh(first.client, first.refresh)).status).toBe(200);
    });

    it('answers invalid_grant to an unknown refresh token and invalid_request to a missing one', async () => {
      const client = await registerClient(t, { trusted: true });
      expectOAuthError(await refresh(client, 'garbage-refresh-token'), 400, 'invalid_grant');
      expectOAuthError(await token(t, client, { grant_type: 'refresh_token' }), 400, 'invalid_request');
    });

    it('refreshes exactly once when 20 refreshes of one refresh token arrive at the same time', async () => {
      const first = await issueTokens(t);
      const answers = await Promise.all(Array.from({ length: 20 }, () => refresh(first.client, first.refresh)));
      const winners = answers.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      for (const res of answers.filter((r) => r.status !== 200)) expectOAuthError(res, 400, 'invalid_grant');
      // The other 19 presented a rotated refresh token: the whole family is revoked, the winner's tokens included.
      expect(await resourceStatus(t, winners[0].body.access_token)).toBe(401);
      expectOAuthError(await refresh(first.client, winners[0].body.refresh_token), 400, 'invalid_grant');
    });
  });
});

describe('POST /token with AUTH_CODE_TTL=1', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, AUTH_CODE_TTL: '1' });
  });
  afterAll(() => t.close());

  it('rejects an expired code with invalid_grant', async () => {
    const client = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const code = await authorizeCode(browser, client, { redirect_uri: REDIRECT_URI });
    await sleep(1200);
    const res = await token(t, client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
    expectOAuthError(res, 400, 'invalid_grant');
    expect(await t.app.get(DataSource).getRepository(RefreshToken).countBy({ clientId: client.client_id })).toBe(0);
  });
});

describe('POST /token with REFRESH_TOKEN_TTL=2', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, REFRESH_TOKEN_TTL: '2' });
  });
  afterAll(() => t.close());

  it('rejects a refresh token after the absolute lifetime of its family with invalid_grant', async () => {
    const first = await issueTokens(t);
    await sleep(2200);
    const res = await token(t, first.client, { grant_type: 'refresh_token', refresh_token: first.refresh });
    expectOAuthError(res, 400, 'invalid_grant');
  });
});

describe('POST /token across two instances sharing one database', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a, b, close } = await createTwoInstances(NO_RATE_LIMITS));
  });
  afterAll(() => close?.());

  async function codeAt(instance: TestApp) {
    const client = await registerClient(instance, { trusted: true });
    const { browser } = await signedIn(instance);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, {
      redirect_uri: REDIRECT_URI,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: pkce.verifier };
    return { client, form };
  }

  it('redeems at one instance a code issued by the other, and refuses it there a second time', async () => {
    const { client, form } = await codeAt(a);
    const first = await token(b, client, form);
    expect(first.status).toBe(200);
    expect(await resourceStatus(a, first.body.access_token)).toBe(200);
    expectOAuthError(await token(a, client, form), 400, 'invalid_grant');
  });

  it('redeems exactly once when 20 redemptions of one code are split between the instances', async () => {
    const { client, form } = await codeAt(a);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => token(i % 2 ? a : b, client, form)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    for (const res of answers.filter((r) => r.status !== 200)) expectOAuthError(res, 400, 'invalid_grant');
  });

  it('refreshes exactly once when 20 refreshes of one refresh token are split between the instances', async () => {
    const first = await issueTokens(a);
    const form = { grant_type: 'refresh_token', refresh_token: first.refresh };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => token(i % 2 ? a : b, first.client, form)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    for (const res of answers.filter((r) => r.status !== 200)) expectOAuthError(res, 400, 'invalid_grant');
  });

  it('recognises at one instance a login session started at the other', async () => {
    const client = await registerClient(a, { trusted: true });
    const { browser } = await signedIn(a);
    const other = new Browser(b);
    for (const [k, v] of browser.cookies) other.cookies.set(k, v);
    const code = await authorizeCode(other, client, { redirect_uri: REDIRECT_URI });
    expect((await token(a, client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI })).status).toBe(200);
  });
});
