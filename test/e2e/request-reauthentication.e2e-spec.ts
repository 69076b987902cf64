import * as oauth from 'oauth4webapi';
import { Secret, TOTP } from 'otpauth';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlRunner, sql } from '../../src/database/sql';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  decodeJwt,
  login,
  parseForm,
  pushCodeRequest,
  registerClient,
  signedIn,
  token,
} from '../support/oauth';
import { type TestApp, createListeningTestApp } from '../support/test-app';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const AGE_SESSIONS = sql`UPDATE sessions SET auth_time = :at WHERE user_id = :userId`;

/**
 * What a request asks of the sign-in holds until a sign-in answers it: a pushed request's prompt=login and max_age
 * are not given up before the login they ask for (a stale session revisiting the request_uri, or posting its consent
 * form, gets no code), and a client's minimum_acr holds for the device grant as at /authorize (step-up first).
 */
describe('a request is answered only by the sign-in it asks for (PAR prompt/max_age, device minimum_acr)', () => {
  let t: TestApp;
  let as: oauth.AuthorizationServer;
  const http = { [oauth.allowInsecureRequests]: true } as const;

  beforeAll(async () => {
    const listening = await createListeningTestApp(NO_RATE_LIMITS);
    t = listening;
    const issuer = new URL(listening.origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
  });
  afterAll(() => t.close());

  /** Pushes a code request of `view` with `extra`; the /authorize path of its request_uri. */
  async function pushed(view: ClientView, extra: Record<string, string>): Promise<{ path: string; requestUri: string; state: string }> {
    const client = { client_id: view.client_id };
    const { response, state } = await pushCodeRequest(as, client, oauth.ClientSecretBasic(view.client_secret!), extra, http);
    const { request_uri } = await oauth.processPushedAuthorizationResponse(as, client, response);
    const path = `/authorize?client_id=${encodeURIComponent(view.client_id)}&request_uri=${encodeURIComponent(request_uri)}`;
    return { path, requestUri: request_uri, state };
  }

  function expectLoginPage(res: Response, path: string): void {
    expect(res.status, res.text.slice(0, 300)).toBe(302);
    expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(path)}`);
  }

  function expectCode(res: Response, state: string, status = 302): void {
    expect(res.status, res.text.slice(0, 300)).toBe(status);
    const callback = new URL(res.headers.location);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('code')).toMatch(/^\S+$/);
  }

  for (const [what, extra] of [
    ['prompt=login', { prompt: 'login' }],
    ['max_age=0', { max_age: '0' }],
    ['prompt=login consent', { prompt: 'login consent' }],
  ] as const) {
    it(`keeps a pushed ${what} until a login answers it: the signed-in browser revisiting the request_uri is sent to log in again`, async () => {
      const view = await registerClient(t, { trusted: true });
      const { user, browser } = await signedIn(t);
      const { path, state } = await pushed(view, extra);
      expectLoginPage(await browser.get(path), path);
      // Without logging in, the same request_uri again: still the login page, never a code.
      expectLoginPage(await browser.get(path), path);
      expectLoginPage(await browser.get(path), path);
      // A fresh login answers it.
      const signedInRes = await login(browser, user.email, undefined, path);
      expect(signedInRes.status).toBe(303);
      expect(signedInRes.headers.location).toBe(path);
      const answered = await browser.get(path);
      if (what === 'prompt=login consent') {
        expect(answered.status).toBe(200);
        expectCode(await browser.submit(answered, { decision: 'allow' }), state, 303);
      } else {
        expectCode(answered, state);
      }
    });
  }

  it('keeps a pushed max_age against a session too old for it, after the first visit as before it', async () => {
    const view = await registerClient(t, { trusted: true });
    const { user, browser } = await signedIn(t);
    const { path, state } = await pushed(view, { max_age: '300' });
    await t.app.get(SqlRunner).run(AGE_SESSIONS, { at: Date.now() - 600_000, userId: user.id });
    expectLoginPage(await browser.get(path), path);
    expectLoginPage(await browser.get(path), path);
    expect((await login(browser, user.email, undefined, path)).status).toBe(303);
    expectCode(await browser.get(path), state);
  });

  it("does not take the consent form's post for the login a pushed request asks for, before or after its first visit", async () => {
    const view = await registerClient(t);
    const { user, browser } = await signedIn(t);
    const csrf = parseForm((await browser.get('/device')).text).hidden.csrf;
    expect(csrf).toMatch(/^\S+$/);
    const allow = (requestUri: string) =>
      browser.post('/authorize/consent', { csrf, decision: 'allow', client_id: view.client_id, request_uri: requestUri });

    // Posted straight away, the request never visited: back to /authorize, which asks for the login.
    const first = await pushed(view, { prompt: 'login' });
    const unvisited = await allow(first.requestUri);
    expect(unvisited.status, unvisited.text.slice(0, 300)).toBe(303);
    expect(unvisited.headers.location).toBe(first.path);
    expectLoginPage(await browser.get(first.path), first.path);
    // After the visit that asked for the login, the stale session's post is sent back again.
    const visited = await allow(first.requestUri);
    expect(visited.status).toBe(303);
    expect(visited.headers.location).toBe(first.path);

    const aged = await pushed(view, { max_age: '0' });
    const tooOld = await allow(aged.requestUri);
    expect(tooOld.status).toBe(303);
    expect(tooOld.headers.location).toBe(aged.path);

    // After a fresh login the consent page comes, and its answer is the code.
    expect((await login(browser, user.email, undefined, first.path)).status).toBe(303);
    const consent = await browser.get(first.path);
    expect(consent.status).toBe(200);
    expectCode(await browser.submit(consent, { decision: 'allow' }), first.state, 303);
  });

  /** Sets up an authenticator on the account page of a signed-in browser (its session stays a password one). */
  async function addAuthenticator(browser: Browser): Promise<TOTP> {
    const begun = await browser.submit(await browser.get('/account/security'));
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(begun.text)![1];
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
    expect((await browser.submit(begun, { code: totp.generate() })).status).toBe(200);
    return totp;
  }

  async function deviceStart(view: ClientView): Promise<{ device_code: string; user_code: string }> {
    const res = await t.http().post('/device_authorization').type('form').send({ client_id: view.client_id, scope: 'orders:read' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { device_code: string; user_code: string };
  }

  const devicePoll = (view: ClientView, deviceCode: string) => token(t, view, { grant_type: DEVICE_GRANT, device_code: deviceCode });

  it("holds the client's minimum_acr for the device grant: a password-only session is sent to step up, never approves", async () => {
    const view = await registerClient(t, {
      isPublic: true,
      grantTypes: [DEVICE_GRANT],
      scope: 'orders:read',
      redirectUris: [],
      minimumAcr: 'aal2',
    });
    const { user, browser } = await signedIn(t);
    const totp = await addAuthenticator(browser);
    const started = await deviceStart(view);
    const back = `/device?user_code=${started.user_code}`;
    const stepUpAt = `/login/step-up?return_to=${encodeURIComponent(back)}&acr=aal2`;

    // The code followed from the device, or typed in the form: the step-up first, not the approval page.
    const followed = await browser.get(back);
    expect(followed.status, followed.text.slice(0, 300)).toBe(302);
    expect(followed.headers.location).toBe(stepUpAt);
    const csrf = parseForm((await browser.get('/device')).text).hidden.csrf;
    const typed = await browser.post('/device', { csrf, user_code: started.user_code.replace('-', '').toLowerCase() });
    expect(typed.status).toBe(303);
    expect(typed.headers.location).toBe(stepUpAt);
    // The approval posted by hand is not taken either: the device is still waiting.
    const forced = await browser.post('/device/decision', { csrf, user_code: started.user_code, decision: 'allow' });
    expect(forced.status).toBe(303);
    expect(forced.headers.location).toBe(stepUpAt);
    const waiting = await devicePoll(view, started.device_code);
    expect(waiting.status).toBe(400);
    expect(waiting.body.error).toBe('authorization_pending');

    // After the step-up with a code, the approval page and a token of the client's level.
    const stepUp = await browser.get(stepUpAt);
    expect(stepUp.status).toBe(200);
    expect(stepUp.text).toContain('<h1>Enter your code</h1>');
    const stepped = await browser.submit(stepUp, { code: totp.generate({ timestamp: Date.now() + 30_000 }) });
    expect(stepped.status).toBe(303);
    expect(stepped.headers.location).toBe(back);
    const consent = await browser.get(back);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain(`<strong>${started.user_code}</strong>`);
    const done = await browser.submit(consent, { decision: 'allow' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('Device connected');
    const tokens = await devicePoll(view, started.device_code);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(decodeJwt(tokens.body.access_token).payload).toMatchObject({ sub: user.id, acr: 'aal2', amr: ['pwd', 'otp', 'mfa'] });
  });

  it('lets a password-only session deny a device request of such a client, and approve one of a client without a minimum', async () => {
    const strict = await registerClient(t, {
      isPublic: true,
      grantTypes: [DEVICE_GRANT],
      scope: 'orders:read',
      redirectUris: [],
      minimumAcr: 'aal2',
    });
    const lax = await registerClient(t, { isPublic: true, grantTypes: [DEVICE_GRANT], scope: 'orders:read', redirectUris: [] });
    const { browser } = await signedIn(t);
    const csrf = parseForm((await browser.get('/device')).text).hidden.csrf;
    const refused = await deviceStart(strict);
    const denied = await browser.post('/device/decision', { csrf, user_code: refused.user_code, decision: 'deny' });
    expect(denied.status).toBe(200);
    expect(denied.text).toContain('Request denied');
    const answer = await devicePoll(strict, refused.device_code);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('access_denied');

    const plain = await deviceStart(lax);
    const consent = await browser.get(`/device?user_code=${plain.user_code}`);
    expect(consent.status).toBe(200);
    expect((await browser.submit(consent, { decision: 'allow' })).status).toBe(200);
    const tokens = await devicePoll(lax, plain.device_code);
    expect(tokens.status).toBe(200);
    expect(decodeJwt(tokens.body.access_token).payload.acr).toBe('aal1');
  });
});
