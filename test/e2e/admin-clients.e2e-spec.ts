import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { Client } from '../../src/oauth/entities/client.entity';
import { NO_RATE_LIMITS, expectOAuthError, issueTokens, resourceStatus, token } from '../support/oauth';
import { expectProblem, expectValidationProblem } from '../support/problem';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

describe('admin API for clients (/admin/clients, clients:admin + admin role)', () => {
  let t: TestApp;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    const admin = await t.createUser({ role: 'admin' });
    adminToken = await t.token(admin.id, ['clients:admin', 'audit:read']);
  });
  afterAll(() => t.close());

  const as = (accessToken: string) => ({
    get: (path: string) =>
      t
        .http()
        .get(path)
        .set(...bearer(accessToken)),
    post: (path: string, body?: object) =>
      t
        .http()
        .post(path)
        .set(...bearer(accessToken))
        .send(body),
    put: (path: string, body: object) =>
      t
        .http()
        .put(path)
        .set(...bearer(accessToken))
        .send(body),
    delete: (path: string) =>
      t
        .http()
        .delete(path)
        .set(...bearer(accessToken)),
  });
  const admin = () => as(adminToken);

  it('creates a confidential client: 201, Location, the secret once, the settings as given', async () => {
    const res = await admin().post('/admin/clients', {
      name: 'Reporting',
      redirect_uris: ['https://reports.example.com/cb'],
      scope: 'users:read orders:read',
      refresh_grace_seconds: 5,
      post_logout_redirect_uris: ['https://reports.example.com/signed-out'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.headers.location).toBe(`/admin/clients/${res.body.client_id}`);
    expect(res.body).toEqual({
      client_id: expect.any(String),
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      name: 'Reporting',
      redirect_uris: ['https://reports.example.com/cb'],
      scope: 'users:read orders:read',
      grant_types: ['authorization_code', 'refresh_token'],
      refresh_grace_seconds: 5,
      resources: [],
      post_logout_redirect_uris: ['https://reports.example.com/signed-out'],
      public: false,
      trusted: false,
    });
    const read = await admin().get(res.headers.location);
    expect(read.status).toBe(200);
    expect(read.body.client_secret).toBeUndefined();
    expect(read.body.name).toBe('Reporting');
  });

  it('lists clients paged, oldest first', async () => {
    const first = await admin().get('/admin/clients?limit=1&offset=0');
    expect(first.status).toBe(200);
    expect(first.body.page).toEqual({ limit: 1, offset: 0, total: expect.any(Number) });
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0].client_secret).toBeUndefined();
  });

  it('refuses bad input with a 400 naming the fields, and combinations the service refuses with invalid-client-settings', async () => {
    const bad = await admin().post('/admin/clients', {
      name: '',
      redirect_uris: 'https://x',
      public: 'yes',
      grant_types: ['password'],
      refresh_grace_seconds: 61,
      extra: 1,
    });
    expectValidationProblem(bad, '/admin/clients', ['name', 'redirect_uris', 'public', 'grant_types', 'refresh_grace_seconds', 'extra']);
    const combination = await admin().post('/admin/clients', { name: 'X', public: true, grant_types: ['client_credentials'] });
    expectProblem(combination, 400, '/admin/clients');
    expect(combination.body.type).toBe('urn:problem-type:invalid-client-settings');
    expect(combination.body.detail).toContain('grant client_credentials is for confidential clients only');
    const badUri = await admin().post('/admin/clients', { name: 'X', redirect_uris: ['not a uri'] });
    expectProblem(badUri, 400, '/admin/clients');
    expect(badUri.body.detail).toContain('redirect_uri');
    const badLogoutUri = await admin().post('/admin/clients', {
      name: 'X',
      redirect_uris: ['https://x.example/cb'],
      post_logout_redirect_uris: ['https://x.example/bye#top'],
    });
    expectProblem(badLogoutUri, 400, '/admin/clients');
    expect(badLogoutUri.body.detail).toBe('post_logout_redirect_uri "https://x.example/bye#top" must not have a fragment');
  });

  it('changes scopes, redirect URIs and post-logout redirect URIs (PUT); an unknown client is 404', async () => {
    const created = (await admin().post('/admin/clients', { name: 'App', redirect_uris: ['https://app.example.com/cb'] })).body;
    const res = await admin().put(`/admin/clients/${created.client_id}`, {
      scope: 'orders:read',
      redirect_uris: ['https://app.example.com/cb2'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      scope: 'orders:read',
      redirect_uris: ['https://app.example.com/cb2'],
      post_logout_redirect_uris: [],
    });
    const logout = await admin().put(`/admin/clients/${created.client_id}`, { post_logout_redirect_uris: ['https://app.example.com/bye'] });
    expect(logout.status, JSON.stringify(logout.body)).toBe(200);
    expect(logout.body).toMatchObject({ scope: 'orders:read', post_logout_redirect_uris: ['https://app.example.com/bye'] });
    expect((await admin().get(`/admin/clients/${created.client_id}`)).body.post_logout_redirect_uris).toEqual([
      'https://app.example.com/bye',
    ]);
    expectProblem(await admin().put('/admin/clients/no-such-client', { scope: 'orders:read' }), 404, '/admin/clients/no-such-client');
    expectProblem(await admin().get('/admin/clients/no-such-client'), 404, '/admin/clients/no-such-client');
  });

  it('adds and removes scopes (PUT add_scope / remove_scope) without restating the others, and refuses what cannot be', async () => {
    const created = (
      await admin().post('/admin/clients', { name: 'Grows', redirect_uris: ['https://grows.example/cb'], scope: 'users:read' })
    ).body;
    const path = `/admin/clients/${created.client_id}`;
    const added = await admin().put(path, { add_scope: 'orders:read orders:write' });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.scope).toBe('users:read orders:read orders:write');
    const removed = await admin().put(path, { remove_scope: 'users:read', add_scope: 'openid' });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body.scope).toBe('orders:read orders:write openid');
    expect((await admin().get(path)).body.scope).toBe('orders:read orders:write openid');
    const both = await admin().put(path, { scope: 'users:read', add_scope: 'orders:read' });
    expectProblem(both, 400, path);
    expect(both.body.detail).toBe('scope replaces the scopes: give it, or add_scope / remove_scope, not both');
    expectProblem(await admin().put(path, { add_scope: 'admin:everything' }), 400, path);
    expectProblem(await admin().put(path, { remove_scope: 'orders:read orders:write openid' }), 400, path);
    expect((await admin().get(path)).body.scope).toBe('orders:read orders:write openid');
  });

  it('keeps every scope of simultaneous add_scope / remove_scope changes (none is lost to another read before it)', async () => {
    const created = (
      await admin().post('/admin/clients', { name: 'Busy', redirect_uris: ['https://busy.example/cb'], scope: 'users:read' })
    ).body;
    const path = `/admin/clients/${created.client_id}`;
    // Each reads the row and writes it back: without a check that the row is still what it read, the last one wins.
    const changes = [{ add_scope: 'orders:read' }, { add_scope: 'orders:write' }, { add_scope: 'openid' }, { remove_scope: 'users:read' }];
    const answers = await Promise.all(changes.map((change) => admin().put(path, change)));
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200]);
    expect((await admin().get(path)).body.scope.split(' ').sort()).toEqual(['openid', 'orders:read', 'orders:write']);
    const events = await admin().get(`/admin/audit-events?type=client.updated&client_id=${created.client_id}`);
    expect(events.body.page.total).toBe(4);
  });

  it('changes only the fields asked for, from the stored row: a change another instance made to another field stays', async () => {
    const created = await admin().post('/admin/clients', { name: 'Two instances', redirect_uris: ['https://two.example/cb'] });
    expect(created.status).toBe(201);
    const id = created.body.client_id as string;
    const clients = t.app.get(ClientsService);
    await clients.find(id); // this instance has it cached
    // Another instance registers a post-logout redirect URI meanwhile.
    await t.app
      .get(DataSource)
      .getRepository(Client)
      .update({ id }, { postLogoutRedirectUris: ['https://two.example/bye'] });
    const res = await admin().put(`/admin/clients/${id}`, { scope: 'users:read' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ scope: 'users:read', post_logout_redirect_uris: ['https://two.example/bye'] });
    const stored = await t.app.get(DataSource).getRepository(Client).findOneByOrFail({ id });
    expect(stored.postLogoutRedirectUris).toEqual(['https://two.example/bye']);
    expect(stored.scope).toBe('users:read');
  });

  it('rotates a secret: the new one works, the old one is refused', async () => {
    const created = (await admin().post('/admin/clients', { name: 'Batch', grant_types: ['client_credentials'], scope: 'users:read' }))
      .body;
    const rotated = await admin().post(`/admin/clients/${created.client_id}/secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.client_secret).not.toBe(created.client_secret);
    expectOAuthError(await token(t, created, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    expect((await token(t, { ...created, client_secret: rotated.body.client_secret }, { grant_type: 'client_credentials' })).status).toBe(
      200,
    );
    const publicClient = (
      await admin().post('/admin/clients', { name: 'SPA', public: true, redirect_uris: ['https://spa.example.com/cb'] })
    ).body;
    expectProblem(
      await admin().post(`/admin/clients/${publicClient.client_id}/secret`),
      400,
      `/admin/clients/${publicClient.client_id}/secret`,
    );
  });

  it('deletes a client (204): its tokens stop working, and it is gone', async () => {
    const created = (await admin().post('/admin/clients', { name: 'Doomed', redirect_uris: ['https://client.example/cb'], trusted: true }))
      .body;
    const { access, refresh } = await issueTokens(t, { client: created });
    expect(await resourceStatus(t, access)).toBe(200);
    expect((await admin().delete(`/admin/clients/${created.client_id}`)).status).toBe(204);
    expect(await resourceStatus(t, access)).toBe(401);
    expectOAuthError(await token(t, created, { grant_type: 'refresh_token', refresh_token: refresh }), 401, 'invalid_client');
    expectProblem(await admin().get(`/admin/clients/${created.client_id}`), 404, `/admin/clients/${created.client_id}`);
  });

  it('refuses a non-admin even with clients:admin (403 role-required), and an admin without the scope (403 insufficient_scope)', async () => {
    const user = await t.createUser();
    const userRes = await as(await t.token(user.id, ['clients:admin'])).post('/admin/clients', {
      name: 'Mine',
      redirect_uris: ['https://x.example/cb'],
    });
    expectProblem(userRes, 403, '/admin/clients');
    expect(userRes.body.type).toBe('urn:problem-type:role-required');
    const adminUser = await t.createUser({ role: 'admin' });
    const noScope = await as(await t.token(adminUser.id, ['users:read'])).get('/admin/clients');
    expectProblem(noScope, 403, '/admin/clients');
    expect(noScope.body.type).toBe('urn:problem-type:insufficient-scope');
    expectProblem(await t.http().get('/admin/clients'), 401, '/admin/clients');
  });

  it('refuses a client-credentials token, whatever its scopes', async () => {
    const service = (await admin().post('/admin/clients', { name: 'Robot', grant_types: ['client_credentials'], scope: 'clients:admin' }))
      .body;
    const robot = (await token(t, service, { grant_type: 'client_credentials' })).body.access_token as string;
    const res = await as(robot).get('/admin/clients');
    expectProblem(res, 403, '/admin/clients');
    expect(res.body.type).toBe('urn:problem-type:user-token-required');
  });
});
