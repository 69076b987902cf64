import * as oauth from 'oauth4webapi';
import { generateKeyPair } from 'jose';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DeviceAuthorizationsRepository } from '../../src/oauth/device/device-authorizations.repository';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { AuditService } from '../../src/audit/audit.service';
import { SqlRunner, sql } from '../../src/database/sql';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { Browser, NO_RATE_LIMITS, decodeJwt, login, registerClient, signedIn } from '../support/oauth';
import { type TestApp, type TestDatabase, createListeningTestApp, createTestApp, createTestDatabase } from '../support/test-app';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;
const http = { [oauth.allowInsecureRequests]: true } as const;
const EXPIRE = sql`UPDATE device_authorizations SET expires_at = :at`;

/** The OAuth error a token response carries, as oauth4webapi reports it. */
async function pollError(poll: Promise<unknown>): Promise<string | undefined> {
  try {
    await poll;
    return undefined;
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return error.error;
    throw error;
  }
}

/**
 * The device authorization grant (RFC 8628), driven by oauth4webapi: a device asks on one instance, the person
 * enters the code in a browser on the other, the device polls (authorization_pending, slow_down), gets its tokens
 * once; a denial, an expired code, DPoP-bound tokens, and a user-code guesser stopped by the rate limit.
 */
describe('device authorization grant (RFC 8628, oauth4webapi)', () => {
  let db: TestDatabase;
  let a: TestApp & { origin: string };
  let b: TestApp;
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createListeningTestApp(NO_RATE_LIMITS, '127.0.0.1', db);
    b = await createTestApp({ ...NO_RATE_LIMITS, ISSUER: a.origin }, db);
    const issuer = new URL(a.origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await db.drop();
  });

  const clientOf = (view: ClientView): oauth.Client => ({ client_id: view.client_id });
  const deviceClient = () =>
    registerClient(a, { isPublic: true, grantTypes: [DEVICE_GRANT, 'refresh_token'], scope: 'orders:read', redirectUris: [] });

  async function start(view: ClientView) {
    const res = await oauth.deviceAuthorizationRequest(as, clientOf(view), oauth.None(), { scope: 'orders:read' }, http);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return oauth.processDeviceAuthorizationResponse(as, clientOf(view), res);
  }

  const poll = (view: ClientView, deviceCode: string, options: oauth.TokenEndpointRequestOptions = {}) =>
    oauth.deviceCodeGrantRequest(as, clientOf(view), oauth.None(), deviceCode, { ...http, ...options });

  it('publishes the endpoint and the grant type', () => {
    expect(as.device_authorization_endpoint).toBe(`${a.origin}/device_authorization`);
    expect(as.grant_types_supported).toContain(DEVICE_GRANT);
  });

  it('gives the device its tokens once the person allows it on the other instance, after pending and slow_down', async () => {
    const view = await deviceClient();
    const started = await start(view);
    expect(started.user_code).toMatch(USER_CODE);
    expect(started.verification_uri).toBe(`${a.origin}/device`);
    expect(started.verification_uri_complete).toBe(`${a.origin}/device?user_code=${started.user_code}`);
    expect(started.expires_in).toBe(600);
    expect(started.interval).toBe(5);

    const pending = await pollError(oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, started.device_code)));
    expect(pending).toBe('authorization_pending');
    const tooSoon = await pollError(oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, started.device_code)));
    expect(tooSoon).toBe('slow_down');

    // The person, on the other instance, types the code in lower case without the dash.
    const { user, browser } = await signedIn(b);
    const form = await browser.get('/device');
    expect(form.status).toBe(200);
    expect(form.text).toContain('Enter the code your device shows.');
    const typed = started.user_code.replace('-', '').toLowerCase();
    const consent = await browser.submit(form, { user_code: typed });
    expect(consent.status).toBe(200);
    expect(consent.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(consent.text).toContain(`<strong>${started.user_code}</strong>`);
    expect(consent.text).toContain('<code>orders:read</code>');
    const done = await browser.submit(consent, { decision: 'allow' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('Device connected');

    const tokens = await oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, started.device_code));
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.scope).toBe('orders:read');
    expect(tokens.refresh_token).toBeDefined();
    expect(decodeJwt(tokens.access_token).payload.sub).toBe(user.id);
    expect((await a.http().get('/api/resource').set('Authorization', `Bearer ${tokens.access_token}`)).status).toBe(200);
    // Once only.
    const again = await pollError(oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, started.device_code)));
    expect(again).toBe('invalid_grant');
    // The same code cannot be answered twice either.
    const twice = await browser.submit(consent, { decision: 'allow' });
    expect(twice.status).toBe(400);

    // The grant is one like any other: the connected-apps page lists it, the refresh token works.
    const apps = await browser.get('/account/apps');
    expect(apps.text).toContain(`<h2>${view.name}</h2>`);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      clientOf(view),
      await oauth.refreshTokenGrantRequest(as, clientOf(view), oauth.None(), tokens.refresh_token!, http),
    );
    expect(refreshed.scope).toBe('orders:read');

    const events = await a.app.get(AuditService).list(Object.assign(new AuditEventsQueryDto(), { client_id: view.client_id }));
    const types = events.data.map((e) => e.type);
    for (const type of ['device.requested', 'device.approved', 'device.redeemed']) expect(types).toContain(type);
  });

  it('answers access_denied after a denial, and expired_token once the code is past its time', async () => {
    const view = await deviceClient();
    const denied = await start(view);
    const { browser } = await signedIn(a);
    const consent = await browser.get(`/device?user_code=${denied.user_code}`);
    expect(consent.status).toBe(200);
    const done = await browser.submit(consent, { decision: 'deny' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('Request denied');
    expect(await pollError(oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, denied.device_code)))).toBe(
      'access_denied',
    );

    const late = await start(view);
    await a.app.get(SqlRunner).run(EXPIRE, { at: Date.now() - 1 });
    expect(await pollError(oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, late.device_code)))).toBe('expired_token');
    const page = await browser.get(`/device?user_code=${late.user_code}`);
    expect(page.status).toBe(400);
    expect(page.text).toContain('This code is not valid');
  });

  it('binds the tokens to the key of a DPoP proof, the public client refresh token too', async () => {
    const view = await deviceClient();
    const started = await start(view);
    const { browser } = await signedIn(a);
    await browser.submit(await browser.get(`/device?user_code=${started.user_code}`), { decision: 'allow' });
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const dpop = oauth.DPoP(clientOf(view), { privateKey, publicKey } as Parameters<typeof oauth.DPoP>[1]);
    const tokens = await oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, started.device_code, { DPoP: dpop }));
    expect(tokens.token_type).toBe('dpop');
    const withoutProof = await a
      .http()
      .post('/token')
      .type('form')
      .send({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: view.client_id });
    expect(withoutProof.status).toBe(400);
    expect(withoutProof.body.error).toBe('invalid_grant');
  });

  it('sends a person without a session to sign in first, and comes back to the code', async () => {
    const view = await deviceClient();
    const started = await start(view);
    const user = await a.createUser();
    const browser = new Browser(a);
    const back = `/device?user_code=${started.user_code}`;
    const res = await browser.get(back);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(back)}`);
    const signIn = await login(browser, user.email, undefined, back);
    expect(signIn.status).toBe(303);
    expect(signIn.headers.location).toBe(back);
    expect((await browser.get(back)).text).toContain(`<strong>${started.user_code}</strong>`);
  });

  it('refuses a client without the grant, and a form without the session CSRF token', async () => {
    const other = await registerClient(a, { isPublic: true });
    const res = await a.http().post('/device_authorization').type('form').send({ client_id: other.client_id });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
    const view = await deviceClient();
    const started = await start(view);
    const { browser } = await signedIn(a);
    const forged = await browser.post('/device/decision', { user_code: started.user_code, decision: 'allow', csrf: 'forged' });
    expect(forged.status).toBe(403);
    expect(await pollError(oauth.processDeviceCodeResponse(as, clientOf(view), await poll(view, started.device_code)))).toBe(
      'authorization_pending',
    );
  });
});

describe('device authorization grant: a user code drawn twice', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(async () => {
    await t.close();
  });

  it('draws new codes when the ones drawn are taken already (the database says so), instead of a 500', async () => {
    const view = await registerClient(t, { isPublic: true, grantTypes: [DEVICE_GRANT], scope: 'orders:read', redirectUris: [] });
    const repository = t.app.get(DeviceAuthorizationsRepository);
    const insert = repository.insert.bind(repository);
    // The first codes drawn are stored by someone else just before: the real unique index refuses them.
    const spy = vi.spyOn(repository, 'insert').mockImplementationOnce(async (request, event) => {
      await insert(request, { ...event, id: randomUUID() });
      return insert(request, event);
    });
    try {
      const res = await t.http().post('/device_authorization').type('form').send({ client_id: view.client_id });
      expect(res.status).toBe(200);
      expect(spy).toHaveBeenCalledTimes(2);
      const [first, second] = spy.mock.calls.map(([request]) => request.userCodeHash);
      expect(second).not.toBe(first);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('device authorization grant: a user-code guesser', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_LOGIN: '5' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('is stopped by the rate limit after a few wrong codes', async () => {
    const { browser } = await signedIn(t);
    const form = await browser.get('/device');
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await browser.submit(form, { user_code: 'BBBB-BBBB' })).status);
    expect(statuses.slice(0, 5)).toEqual([400, 400, 400, 400, 400]);
    expect(statuses.slice(5)).toEqual([429, 429]);
  });
});
