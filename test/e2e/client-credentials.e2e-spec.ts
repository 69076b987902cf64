import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView, InvalidClientInputError } from '../../src/oauth/clients/client-metadata';
import {
  authorizePath,
  backChannel,
  bearerChallenge,
  Browser,
  expectOAuthError,
  issueTokens,
  NO_RATE_LIMITS,
  registerClient,
  resourceStatus,
  sleep,
  token,
} from '../support/oauth';
import { expectProblem } from '../support/problem';
import { ALL_SCOPES, type TestApp, bearer, createTestApp } from '../support/test-app';

const ACCESS_TOKEN_TTL = 600;

describe('client credentials grant (RFC 6749 4.4)', () => {
  let t: TestApp;
  /** A service client allowed only client_credentials, with users:read and orders:read. */
  let service: ClientView;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, ACCESS_TOKEN_TTL: String(ACCESS_TOKEN_TTL) });
    service = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read orders:read' });
  });
  afterAll(() => t.close());

  /** Waits for the next whole second (access tokens carry their issue time in seconds). */
  const nextSecond = () => sleep(1000 - (Date.now() % 1000) + 20);

  const machineToken = async (client: ClientView = service, scope?: string): Promise<string> => {
    const res = await token(t, client, { grant_type: 'client_credentials', scope });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.access_token as string;
  };

  describe('registration', () => {
    it('shows the grants a client may use; the authorization-code grant with refresh tokens by default', async () => {
      expect(service.grant_types).toEqual(['client_credentials']);
      expect(service.redirect_uris).toEqual([]);
      expect(service.client_secret).toEqual(expect.any(String));
      expect((await registerClient(t)).grant_types).toEqual(['authorization_code', 'refresh_token']);
    });

    it('refuses client_credentials for a public client, an unknown grant, and refresh_token without authorization_code', async () => {
      const clients = t.app.get(ClientsService);
      const base = { name: 'Batch job', redirectUris: [] };
      await expect(clients.create({ ...base, isPublic: true, grantTypes: ['client_credentials'] })).rejects.toThrow(
        InvalidClientInputError,
      );
      await expect(clients.create({ ...base, grantTypes: ['password'] })).rejects.toThrow(/--grant must be one of/);
      await expect(clients.create({ ...base, grantTypes: ['refresh_token'] })).rejects.toThrow(/needs --grant authorization_code/);
      // A service gets exactly the scopes named for it: never every scope by default.
      await expect(clients.create({ ...base, grantTypes: ['client_credentials'] })).rejects.toThrow(/--scope is required/);
      // The code grant still needs somewhere to send the code.
      await expect(clients.create({ ...base, grantTypes: ['authorization_code', 'client_credentials'] })).rejects.toThrow(/redirect-uri/);
    });
  });

  describe('POST /token grant_type=client_credentials', () => {
    it('answers 200 with access_token, token_type, expires_in and scope (every allowed scope), no refresh_token, not cacheable', async () => {
      const res = await token(t, service, { grant_type: 'client_credentials' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
      expect(res.body.token_type).toBe('Bearer');
      expect(res.body.expires_in).toBe(ACCESS_TOKEN_TTL);
      expect(res.body.scope).toBe('users:read orders:read');
    });

    it('issues an RFC 9068 token whose sub and client_id are the client, marked gty=client_credentials', async () => {
      const jwks = createLocalJWKSet((await t.http().get('/.well-known/jwks.json')).body);
      const { payload, protectedHeader } = await jwtVerify(await machineToken(service, 'orders:read'), jwks, {
        issuer: t.config.issuer,
        audience: t.config.audience,
        typ: 'at+jwt',
      });
      expect(protectedHeader.alg).toBe('RS256');
      expect(payload.sub).toBe(service.client_id);
      expect(payload.client_id).toBe(service.client_id);
      expect(payload.scope).toBe('orders:read');
      expect(payload.gty).toBe('client_credentials');
      expect(payload.exp! - payload.iat!).toBe(ACCESS_TOKEN_TTL);
    });

    it('works with client_secret_post as with client_secret_basic', async () => {
      const res = await token(t, service, { grant_type: 'client_credentials', scope: 'users:read' }, 'post');
      expect(res.status).toBe(200);
      expect(res.body.scope).toBe('users:read');
    });

    it('refuses a scope the client is not allowed (invalid_scope), even next to allowed ones', async () => {
      expectOAuthError(
        await token(t, service, { grant_type: 'client_credentials', scope: 'users:read users:write' }),
        400,
        'invalid_scope',
      );
      expectOAuthError(await token(t, service, { grant_type: 'client_credentials', scope: 'no-such-scope' }), 400, 'invalid_scope');
    });

    it('refuses a public client (invalid_client, 401): it has no secret to authenticate with', async () => {
      const app = await registerClient(t, { isPublic: true });
      expectOAuthError(await token(t, app, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    });

    it('refuses a confidential client not allowed the grant (unauthorized_client)', async () => {
      const webApp = await registerClient(t);
      expectOAuthError(await token(t, webApp, { grant_type: 'client_credentials' }), 400, 'unauthorized_client');
    });

    it('refuses a wrong secret (invalid_client with a Basic challenge)', async () => {
      const res = await token(t, { ...service, client_secret: 'not-the-secret' }, { grant_type: 'client_credentials' });
      expectOAuthError(res, 401, 'invalid_client');
      expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    });

    it('keeps a client-credentials client away from the other grants and from /authorize', async () => {
      expectOAuthError(await token(t, service, { grant_type: 'authorization_code', code: 'x'.repeat(43) }), 400, 'unauthorized_client');
      expectOAuthError(await token(t, service, { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) }), 400, 'unauthorized_client');
      const res = await new Browser(t).get(authorizePath({ response_type: 'code', client_id: service.client_id }));
      // No redirect URI is registered, so nothing is redirected: an error page.
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
    });

    it('is rate-limited like the rest of /token', async () => {
      const limited = await createTestApp({ RATE_LIMIT_TOKEN: '2' });
      try {
        const client = await registerClient(limited, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read' });
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) statuses.push((await token(limited, client, { grant_type: 'client_credentials' })).status);
        expect(statuses).toEqual([200, 200, 429]);
      } finally {
        await limited.close();
      }
    });
  });

  describe('at the resource server', () => {
    it('GET /api/resource answers with the client as the caller', async () => {
      const res = await t
        .http()
        .get('/api/resource')
        .set(...bearer(await machineToken()));
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        sub: service.client_id,
        client_id: service.client_id,
        scope: 'users:read orders:read',
        message: 'You have accessed a protected resource.',
      });
    });

    it('GET /users (an admin-scoped service route) answers with users:read, and 403 insufficient_scope without it', async () => {
      await t.createUser();
      const res = await t
        .http()
        .get('/users')
        .set(...bearer(await machineToken()));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
      const narrow = await t
        .http()
        .get('/users')
        .set(...bearer(await machineToken(service, 'orders:read')));
      expectProblem(narrow, 403, '/users');
      expect(narrow.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="users:read"'));
    });

    it('refuses every route that acts for a signed-in user (own records) with 403 user-token-required, whatever the scopes', async () => {
      const all = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: ALL_SCOPES.join(' ') });
      const access = await machineToken(all);
      const user = await t.createUser();
      const attempts = [
        t.http().get(`/users/${user.id}`),
        t.http().put(`/users/${user.id}`).send({ name: 'Taken over' }),
        t.http().delete(`/users/${user.id}`),
        t.http().post('/users').send({ email: 'svc@example.com', password: 'long enough password', name: 'S', gender: 'male', age: 30 }),
        t.http().get(`/users/${user.id}/orders`),
        t.http().post(`/users/${user.id}/orders`).send({ item: 'x', quantity: 1, price: 1 }),
        // A user id equal to the client id changes nothing: the token says it has no user.
        t.http().get(`/users/${all.client_id}`),
      ];
      for (const [i, attempt] of attempts.entries()) {
        const res = await attempt.set(...bearer(access));
        expect(res.status, `attempt ${i}`).toBe(403);
        expect(res.body.type).toBe('urn:problem-type:user-token-required');
        // A Bearer challenge that does not send the client round for scopes: none would make this token acceptable.
        expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, `error="invalid_token", error_description="${res.body.detail}"`));
      }
      // Nothing was changed.
      const self = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...bearer(await t.token(user.id)));
      expect(self.body.name).toBe(user.name);
    });

    it('revoking one client-credentials token ends every token the client obtained until then, not those it obtains later', async () => {
      const client = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read' });
      const access = await machineToken(client);
      const earlier = await machineToken(client);
      const before = await backChannel(t, '/introspect', client, { token: access });
      expect(before.status).toBe(200);
      expect(before.body).toMatchObject({ active: true, sub: client.client_id, client_id: client.client_id, token_type: 'Bearer' });

      expect((await backChannel(t, '/revoke', client, { token: access })).status).toBe(200);
      expect(await resourceStatus(t, access)).toBe(401);
      expect(await resourceStatus(t, earlier)).toBe(401);
      expect((await backChannel(t, '/introspect', client, { token: access })).body).toEqual({ active: false });
      // Issue times are whole seconds: a token of the same second as the revocation is revoked too.
      await nextSecond();
      const later = await machineToken(client);
      expect(await resourceStatus(t, later)).toBe(200);
      // Another client's tokens are not affected.
      expect(await resourceStatus(t, await machineToken())).toBe(200);
    });

    it('deleting the client or replacing its secret (admin API) ends the client-credentials tokens it holds', async () => {
      const admin = await t.createUser({ role: 'admin' });
      const adminToken = await t.token(admin.id, ['clients:admin']);
      const rotated = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read' });
      const beforeRotation = await machineToken(rotated);
      const rotation = await t
        .http()
        .post(`/admin/clients/${rotated.client_id}/secret`)
        .set(...bearer(adminToken));
      expect(rotation.status).toBe(200);
      expect(await resourceStatus(t, beforeRotation)).toBe(401);
      await nextSecond();
      expect(await resourceStatus(t, await machineToken({ ...rotated, client_secret: rotation.body.client_secret }))).toBe(200);

      const deleted = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read' });
      const beforeDeletion = await machineToken(deleted);
      expect(
        (
          await t
            .http()
            .delete(`/admin/clients/${deleted.client_id}`)
            .set(...bearer(adminToken))
        ).status,
      ).toBe(204);
      expect(await resourceStatus(t, beforeDeletion)).toBe(401);
    });

    it('a user token keeps working on the user routes it always could (the marker is not needed there)', async () => {
      const { access, userId } = await issueTokens(t, { scope: 'users:read' });
      const res = await t
        .http()
        .get(`/users/${userId}`)
        .set(...bearer(access));
      expect(res.status).toBe(200);
    });
  });

  it('metadata lists the grant', async () => {
    const res = await t.http().get('/.well-known/oauth-authorization-server');
    expect(res.body.grant_types_supported).toEqual([
      'authorization_code',
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:token-exchange',
      'urn:ietf:params:oauth:grant-type:device_code',
    ]);
  });
});
