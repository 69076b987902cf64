import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  NO_RATE_LIMITS,
  backChannel,
  expectOAuthError,
  issueTokens,
  registerClient,
  resourceStatus,
  signWithServiceKey,
  signedIn,
  sleep,
  token,
} from '../support/oauth';
import { ALL_SCOPES, type TestApp, type TestDatabase, createTestApp, createTestDatabase } from '../support/test-app';

describe('POST /revoke and POST /introspect', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  const revoke = (client: ClientView, tokenValue: string | undefined, extra: Record<string, string> = {}) =>
    backChannel(t, '/revoke', client, { token: tokenValue, ...extra });
  const introspect = (client: ClientView, tokenValue: string | undefined, method?: 'basic' | 'post' | 'none') =>
    backChannel(t, '/introspect', client, { token: tokenValue }, method);
  const refresh = (client: ClientView, refreshToken: string) =>
    token(t, client, { grant_type: 'refresh_token', refresh_token: refreshToken });

  describe('POST /revoke', () => {
    it('answers 200 to a token it does not know', async () => {
      const client = await registerClient(t, { trusted: true });
      const res = await revoke(client, 'not-a-token-this-server-issued');
      expect(res.status).toBe(200);
      expect((await revoke(client, 'a.b.c', { token_type_hint: 'access_token' })).status).toBe(200);
    });

    it("answers 200 to another client's tokens and revokes nothing", async () => {
      const owner = await issueTokens(t);
      const other = await registerClient(t, { trusted: true });
      expect((await revoke(other, owner.refresh, { token_type_hint: 'refresh_token' })).status).toBe(200);
      expect((await revoke(other, owner.access)).status).toBe(200);
      expect(await resourceStatus(t, owner.access)).toBe(200);
      expect((await refresh(owner.client, owner.refresh)).status).toBe(200);
    });

    it('revokes the grant of a refresh token: its access token gets 401 and the refresh token invalid_grant', async () => {
      const { client, access, refresh: refreshToken } = await issueTokens(t);
      const res = await revoke(client, refreshToken, { token_type_hint: 'refresh_token' });
      expect(res.status).toBe(200);
      expect(await resourceStatus(t, access)).toBe(401);
      expectOAuthError(await refresh(client, refreshToken), 400, 'invalid_grant');
    });

    it('revokes the grant of an access token: the token gets 401 and its refresh token invalid_grant', async () => {
      const { client, access, refresh: refreshToken } = await issueTokens(t);
      expect((await revoke(client, access, { token_type_hint: 'access_token' })).status).toBe(200);
      expect(await resourceStatus(t, access)).toBe(401);
      expectOAuthError(await refresh(client, refreshToken), 400, 'invalid_grant');
    });

    it('revokes only the grant the token belongs to', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const a = await issueTokens(t, { client, browser });
      const b = await issueTokens(t, { client, browser });
      await revoke(client, a.refresh);
      expect(await resourceStatus(t, a.access)).toBe(401);
      expect(await resourceStatus(t, b.access)).toBe(200);
      expect((await refresh(client, b.refresh)).status).toBe(200);
    });

    it('ignores a wrong token_type_hint', async () => {
      const { client, access, refresh: refreshToken } = await issueTokens(t);
      expect((await revoke(client, refreshToken, { token_type_hint: 'access_token' })).status).toBe(200);
      expect(await resourceStatus(t, access)).toBe(401);
    });

    it('lets a public client revoke its own refresh token with its client_id', async () => {
      const client = await registerClient(t, { trusted: true, isPublic: true });
      const { access, refresh: refreshToken } = await issueTokens(t, { client });
      expect((await revoke(client, refreshToken)).status).toBe(200);
      expect(await resourceStatus(t, access)).toBe(401);
    });

    it('requires client authentication (401 invalid_client) and a token (400 invalid_request)', async () => {
      const { client, refresh: refreshToken } = await issueTokens(t);
      expectOAuthError(
        await backChannel(t, '/revoke', { ...client, client_secret: 'wrong' }, { token: refreshToken }),
        401,
        'invalid_client',
      );
      expectOAuthError(await t.http().post('/revoke').type('form').send({ token: refreshToken }), 401, 'invalid_client');
      expectOAuthError(await revoke(client, undefined), 400, 'invalid_request');
      expect((await refresh(client, refreshToken)).status).toBe(200);
    });
  });

  describe('POST /introspect', () => {
    it('describes an own active access token with exactly active, scope, client_id, sub, exp, iat, iss, aud, token_type Bearer, acr, auth_time', async () => {
      const { client, access, userId } = await issueTokens(t, { scope: 'orders:read users:read' });
      const res = await introspect(client, access);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const claims = decodeJwt(access);
      expect(res.body).toEqual({
        active: true,
        scope: 'orders:read users:read',
        client_id: client.client_id,
        sub: userId,
        exp: claims.exp,
        iat: claims.iat,
        iss: t.config.issuer,
        aud: t.config.audience,
        token_type: 'Bearer',
        // RFC 9470 6: the sign-in's level and time, as the token carries them.
        acr: 'aal1',
        auth_time: claims.auth_time,
      });
      expect(typeof claims.auth_time).toBe('number');
    });

    it('describes an own active refresh token with token_type refresh_token', async () => {
      const { client, refresh: refreshToken, userId } = await issueTokens(t, { scope: 'orders:write' });
      const res = await introspect(client, refreshToken, 'post');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['active', 'aud', 'client_id', 'exp', 'iat', 'iss', 'scope', 'sub', 'token_type']);
      expect(res.body).toMatchObject({
        active: true,
        scope: 'orders:write',
        client_id: client.client_id,
        sub: userId,
        iss: t.config.issuer,
        aud: t.config.audience,
        token_type: 'refresh_token',
      });
      expect(res.body.exp).toBeGreaterThan(Date.now() / 1000);
      expect(res.body.iat).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    });

    it("answers exactly {active:false} for another client's access and refresh tokens", async () => {
      const owner = await issueTokens(t);
      const other = await registerClient(t, { trusted: true });
      expect((await introspect(other, owner.access)).body).toEqual({ active: false });
      expect((await introspect(other, owner.refresh)).body).toEqual({ active: false });
    });

    it('answers exactly {active:false} for revoked tokens', async () => {
      const { client, access, refresh: refreshToken } = await issueTokens(t);
      await revoke(client, refreshToken);
      expect((await introspect(client, access)).body).toEqual({ active: false });
      expect((await introspect(client, refreshToken)).body).toEqual({ active: false });
    });

    it('answers exactly {active:false} for a rotated refresh token', async () => {
      const { client, refresh: refreshToken } = await issueTokens(t);
      const rotated = await refresh(client, refreshToken);
      expect((await introspect(client, refreshToken)).body).toEqual({ active: false });
      expect((await introspect(client, rotated.body.refresh_token)).body).toMatchObject({ active: true });
    });

    it('answers exactly {active:false} for an expired access token', async () => {
      const { client, access } = await issueTokens(t);
      // The genuine token's claims, signed with the service's own key, with only the expiry moved into the past.
      const now = Math.floor(Date.now() / 1000);
      const expired = await signWithServiceKey(t, { ...decodeJwt(access), iat: now - 120, exp: now - 60 });
      const res = await introspect(client, expired);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ active: false });
      // The same re-signing without a past expiry is active: the expiry alone made the difference.
      const unexpired = await signWithServiceKey(t, { ...decodeJwt(access), exp: now + 60 });
      expect((await introspect(client, unexpired)).body).toMatchObject({ active: true });
    });

    it('answers exactly {active:false} for garbage', async () => {
      const client = await registerClient(t, { trusted: true });
      for (const garbage of ['garbage', 'a.b.c', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', 'x'.repeat(5000)]) {
        const res = await introspect(client, garbage);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ active: false });
      }
    });

    it('answers 401 invalid_client to a public client', async () => {
      const client = await registerClient(t, { trusted: true, isPublic: true });
      const { access } = await issueTokens(t, { client });
      expectOAuthError(await introspect(client, access, 'none'), 401, 'invalid_client');
    });

    it('answers 401 invalid_client to a wrong secret', async () => {
      const { client, access } = await issueTokens(t);
      const res = await introspect({ ...client, client_secret: 'wrong' }, access);
      expectOAuthError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toMatch(/^Basic\b/);
    });
  });

  describe('GET /.well-known/oauth-authorization-server', () => {
    it('lists every RFC 8414 field with the values of the contract', async () => {
      const res = await t.http().get('/.well-known/oauth-authorization-server');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const issuer = t.config.issuer;
      expect(res.body).toMatchObject({
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        revocation_endpoint: `${issuer}/revoke`,
        introspection_endpoint: `${issuer}/introspect`,
        response_types_supported: ['code'],
        // The contract lists two; the machine-clients issue (written later) adds client_credentials, the agents issue
        // token exchange (RFC 8693), the devices issue the device grant (RFC 8628).
        grant_types_supported: [
          'authorization_code',
          'refresh_token',
          'client_credentials',
          'urn:ietf:params:oauth:grant-type:token-exchange',
          'urn:ietf:params:oauth:grant-type:device_code',
        ],
        device_authorization_endpoint: `${issuer}/device_authorization`,
        dpop_signing_alg_values_supported: ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'],
        // The contract lists three; private_key_jwt (RFC 7523, written later) adds a fourth.
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
      });
      expect([...res.body.scopes_supported].sort()).toEqual([...ALL_SCOPES].sort());
      expect(res.body.scopes_supported).toEqual(expect.arrayContaining(['orders:read', 'orders:write', 'users:read', 'users:write']));
    });

    it('serves the JWKS its jwks_uri names', async () => {
      const meta = await t.http().get('/.well-known/oauth-authorization-server');
      const jwks = await t.http().get(new URL(meta.body.jwks_uri).pathname);
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys.length).toBeGreaterThan(0);
    });
  });

  describe('deleting a user', () => {
    it("makes the user's access tokens fail and refresh tokens invalid_grant", async () => {
      const victim = await issueTokens(t);
      const bystander = await issueTokens(t, { client: victim.client });
      const admin = await t.createUser({ role: 'admin' });
      const adminToken = await t.token(admin.id, ['users:write']);

      const res = await t.http().delete(`/users/${victim.userId}`).set('Authorization', `Bearer ${adminToken}`);
      expect(res.status).toBe(204);
      expect(await resourceStatus(t, victim.access)).toBe(401);
      expectOAuthError(await refresh(victim.client, victim.refresh), 400, 'invalid_grant');
      expect((await introspect(victim.client, victim.access)).body).toEqual({ active: false });
      // Only that user's grants are gone.
      expect(await resourceStatus(t, bystander.access)).toBe(200);
      expect((await refresh(bystander.client, bystander.refresh)).status).toBe(200);
    });
  });
});

describe('POST /introspect with ACCESS_TOKEN_TTL=1', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, ACCESS_TOKEN_TTL: '1' });
  });
  afterAll(() => t.close());

  it('answers exactly {active:false} once an access token has expired', async () => {
    const { client, access } = await issueTokens(t);
    await sleep(2100);
    const res = await backChannel(t, '/introspect', client, { token: access });
    expect(res.body).toEqual({ active: false });
  });
});

describe('revocation across two instances sharing one database (REVOCATION_SYNC_SECONDS=1)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createTestApp({ ...NO_RATE_LIMITS, REVOCATION_SYNC_SECONDS: '1' }, db);
    b = await createTestApp({ ...NO_RATE_LIMITS, REVOCATION_SYNC_SECONDS: '1' }, db);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  /** Milliseconds until `instance` answers 401 to the token (polling), or Infinity after `limitMs`. */
  async function msUntilRejected(instance: TestApp, accessToken: string, limitMs: number): Promise<number> {
    const start = Date.now();
    while (Date.now() - start < limitMs) {
      if ((await resourceStatus(instance, accessToken)) === 401) return Date.now() - start;
      await sleep(100);
    }
    return Infinity;
  }

  it('stops an access token at the other instance within REVOCATION_SYNC_SECONDS after /revoke of its refresh token', async () => {
    const { client, access, refresh: refreshToken } = await issueTokens(a);
    expect(await resourceStatus(b, access)).toBe(200);
    expect((await backChannel(a, '/revoke', client, { token: refreshToken })).status).toBe(200);
    expect(await resourceStatus(a, access)).toBe(401);
    // One sync period, plus slack for a loaded machine.
    expect(await msUntilRejected(b, access, 2500)).toBeLessThanOrEqual(2500);
    expectOAuthError(await token(b, client, { grant_type: 'refresh_token', refresh_token: refreshToken }), 400, 'invalid_grant');
  });

  it('stops the whole family at both instances when a rotated refresh token is presented again', async () => {
    const { client, access, refresh: refreshToken } = await issueTokens(a);
    expect(await resourceStatus(b, access)).toBe(200);
    const reuse = await token(b, client, { grant_type: 'refresh_token', refresh_token: refreshToken });
    expect(reuse.status).toBe(200);
    // The rotated refresh token presented again, at the first instance: the family is revoked everywhere.
    expectOAuthError(await token(a, client, { grant_type: 'refresh_token', refresh_token: refreshToken }), 400, 'invalid_grant');
    expect(await msUntilRejected(b, reuse.body.access_token, 2500)).toBeLessThanOrEqual(2500);
    expect(await msUntilRejected(b, access, 2500)).toBeLessThanOrEqual(2500);
  });
});
