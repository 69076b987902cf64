import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidClientInputError } from '../../src/oauth/clients/client-metadata';
import { registerClient } from '../support/oauth';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

/** In production, as a deployment would run. */
const PRODUCTION = {
  NODE_ENV: 'production',
  ISSUER: 'https://auth.example.com',
  ALLOW_SQLITE_IN_PRODUCTION: '1',
  KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
};

/** RFC 9700 2.1: no plain-http redirect URI but on a loopback address when NODE_ENV=production, unless allowed for a lab. */
describe('plain-http redirect URIs in production', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(PRODUCTION);
  });
  afterAll(() => t.close());

  it('refuses one on another host than loopback, for redirect and post-logout redirect URIs alike', async () => {
    await expect(registerClient(t, { redirectUris: ['http://app.example.com/cb'] })).rejects.toThrow(InvalidClientInputError);
    await expect(registerClient(t, { redirectUris: ['http://app.example.com/cb'] })).rejects.toThrow(
      '--redirect-uri "http://app.example.com/cb" must be https when NODE_ENV=production',
    );
    await expect(
      registerClient(t, { redirectUris: ['https://app.example.com/cb'], postLogoutRedirectUris: ['http://app.example.com/bye'] }),
    ).rejects.toThrow('--post-logout-redirect-uri "http://app.example.com/bye" must be https');
  });

  it('takes https, http on a loopback address (a native app) and an app-specific scheme', async () => {
    const client = await registerClient(t, {
      redirectUris: [
        'https://app.example.com/cb',
        'http://127.0.0.1:8400/cb',
        'http://[::1]/cb',
        'http://localhost:7000/cb',
        'com.example.app:/cb',
      ],
    });
    expect(client.redirect_uris).toHaveLength(5);
  });

  it('answers 400 through the admin API, and a change to such a URI is refused too', async () => {
    const admin = await t.createUser({ role: 'admin' });
    const token = await t.token(admin.id, ['clients:admin']);
    const created = await t
      .http()
      .post('/admin/clients')
      .set(...bearer(token))
      .send({ name: 'Lab app', redirect_uris: ['http://lab.example.com/cb'] });
    expect(created.status).toBe(400);
    expect(created.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(created.body.detail).toContain('must be https when NODE_ENV=production');

    const client = await registerClient(t, { redirectUris: ['https://app.example.com/cb'] });
    const changed = await t
      .http()
      .put(`/admin/clients/${client.client_id}`)
      .set(...bearer(token))
      .send({ redirect_uris: ['http://app.example.com/cb'] });
    expect(changed.status).toBe(400);
    expect(changed.body.detail).toContain('must be https when NODE_ENV=production');
  });
});

describe('plain-http redirect URIs in a lab (ALLOW_HTTP_REDIRECT_URIS=1)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...PRODUCTION, ALLOW_HTTP_REDIRECT_URIS: '1' });
  });
  afterAll(() => t.close());

  it('takes them', async () => {
    const client = await registerClient(t, { redirectUris: ['http://lab.example.com/cb'] });
    expect(client.redirect_uris).toEqual(['http://lab.example.com/cb']);
  });
});
