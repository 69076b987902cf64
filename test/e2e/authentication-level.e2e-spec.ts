import * as client from 'openid-client';
import { Secret, TOTP } from 'otpauth';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { Browser, NO_RATE_LIMITS, PAGE_CSP, REDIRECT_URI, decodeJwt, login, parseForms, registerClient, signedIn } from '../support/oauth';
import { authorizationRequest, relyingPartyOf } from '../support/openid';
import { SoftAuthenticator } from '../support/passkey-authenticator.mjs';
import { type TestApp, createListeningTestApp } from '../support/test-app';

/**
 * Authentication levels (acr) and step-up: acr_values and a client's own minimum at /authorize, and RFC 9470's
 * insufficient_user_authentication challenge of a resource route, followed by openid-client as the client.
 */
describe('step-up by authentication level (acr_values, RFC 9470)', () => {
  let t: TestApp;
  let issuer: URL;

  beforeAll(async () => {
    const listening = await createListeningTestApp(NO_RATE_LIMITS);
    t = listening;
    issuer = new URL(listening.origin);
  });
  afterAll(() => t.close());

  function expectPage(res: Response, status: number): void {
    expect(res.status, res.text.slice(0, 500)).toBe(status);
    expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
  }

  /** Sets up an authenticator on the account page of a signed-in browser (its session stays a password one). */
  async function addAuthenticator(browser: Browser): Promise<TOTP> {
    const begun = await browser.submit(await browser.get('/account/security'));
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(begun.text)![1];
    const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
    expect((await browser.submit(begun, { code: totp.generate() })).status).toBe(200);
    return totp;
  }

  /** Adds a passkey on the account page of a signed-in browser. */
  async function addPasskey(browser: Browser): Promise<SoftAuthenticator> {
    const page = await browser.get('/account/security');
    const form = parseForms(page.text).find((f) => f.action === '/account/security/passkeys')!.hidden;
    const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
    const authenticator = new SoftAuthenticator();
    const answer = authenticator.register(options.body, { origin: issuer.origin });
    expect((await browser.post('/account/security/passkeys', { ...form, response: JSON.stringify(answer) })).status).toBe(303);
    return authenticator;
  }

  /** An authorization request as openid-client builds it, for the API's scopes, and what it keeps to check the answer. */
  const request = (config: client.Configuration, params: Record<string, string> = {}) =>
    authorizationRequest(config, { scope: 'openid users:read users:write', ...params });

  async function tokensFrom(config: client.Configuration, callback: string, req: { verifier: string; state: string; nonce: string }) {
    return client.authorizationCodeGrant(config, new URL(callback), {
      pkceCodeVerifier: req.verifier,
      expectedState: req.state,
      expectedNonce: req.nonce,
      idTokenExpected: true,
    });
  }

  it('lists the levels in discovery and says the level of the sign-in in ID and access tokens', async () => {
    const discovery = await t.http().get('/.well-known/openid-configuration');
    expect(discovery.body.acr_values_supported).toEqual(['aal1', 'aal2', 'phr']);
    expect(discovery.body.claims_supported).toContain('acr');
    const view = await registerClient(t, { trusted: true });
    const config = await relyingPartyOf(issuer, view);
    const { browser } = await signedIn(t);
    const req = await request(config);
    const callback = await browser.get(req.path);
    expect(callback.status).toBe(302);
    const tokens = await tokensFrom(config, callback.headers.location, req);
    expect(tokens.claims()).toMatchObject({ acr: 'aal1', amr: ['pwd'] });
    // RFC 9068 2.2.1: the access token says when the person signed in, as the ID token does.
    const idAuthTime = tokens.claims()!.auth_time;
    expect(typeof idAuthTime).toBe('number');
    expect(decodeJwt(tokens.access_token).payload).toMatchObject({ acr: 'aal1', amr: ['pwd'], auth_time: idAuthTime });
  });

  it('follows RFC 9470 end to end with openid-client: 401 insufficient_user_authentication, acr_values, step-up with a code, 200', async () => {
    const view: ClientView = await registerClient(t, { trusted: true });
    const config = await relyingPartyOf(issuer, view);
    const admin = await t.createUser({ role: 'admin' });
    const target = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, admin.email)).status).toBe(303);
    const totp = await addAuthenticator(browser);

    // The session is a password one: its token is of level aal1.
    const first = await request(config);
    const callback = await browser.get(first.path);
    expect(callback.status).toBe(302);
    const weak = await tokensFrom(config, callback.headers.location, first);
    expect(weak.claims()?.acr).toBe('aal1');
    const api = new URL(`/users/${target.id}/factors`, issuer);
    const refused = await client.fetchProtectedResource(config, weak.access_token, api, 'DELETE').catch((e) => e);
    expect(refused).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    const challenge = (refused as client.WWWAuthenticateChallengeError).cause[0];
    expect(challenge.scheme).toBe('bearer');
    expect(challenge.parameters).toMatchObject({ error: 'insufficient_user_authentication', acr_values: 'aal2' });

    // The client asks again with the challenge's acr_values: the person gives a code instead of signing in afresh.
    const again = await request(config, { acr_values: challenge.parameters.acr_values! });
    const toStepUp = await browser.get(again.path);
    expect(toStepUp.status).toBe(302);
    expect(toStepUp.headers.location).toBe(`/login/step-up?return_to=${encodeURIComponent(again.path)}&acr=aal2`);
    const stepUp = await browser.get(toStepUp.headers.location);
    expectPage(stepUp, 200);
    expect(stepUp.text).toContain('<h1>Enter your code</h1>');
    const back = await browser.submit(stepUp, { code: totp.generate({ timestamp: Date.now() + 30_000 }) });
    expect(back.status).toBe(303);
    expect(back.headers.location).toBe(again.path);
    const done = await browser.get(back.headers.location);
    expect(done.status).toBe(302);
    const strong = await tokensFrom(config, done.headers.location, again);
    expect(strong.claims()).toMatchObject({ sub: admin.id, acr: 'aal2', amr: ['pwd', 'otp', 'mfa'] });
    const allowed = await client.fetchProtectedResource(config, strong.access_token, api, 'DELETE');
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ userId: target.id, removed: { totp: false, passkeys: 0 } });
  });

  it('steps a two-factor session up to phr with a passkey only (the code form is not offered)', async () => {
    const view = await registerClient(t, { trusted: true });
    const config = await relyingPartyOf(issuer, view);
    const { user, browser } = await signedIn(t);
    const totp = await addAuthenticator(browser);
    // Signed in again with password and code: aal2, which adding a passkey now takes.
    const fresh = new Browser(t);
    const codeStep = await login(fresh, user.email);
    expect(codeStep.status).toBe(200);
    expect((await fresh.submit(codeStep, { code: totp.generate({ timestamp: Date.now() + 30_000 }) })).status).toBe(303);
    const authenticator = await addPasskey(fresh);

    const req = await request(config, { acr_values: 'phr' });
    const toStepUp = await fresh.get(req.path);
    expect(toStepUp.headers.location).toBe(`/login/step-up?return_to=${encodeURIComponent(req.path)}&acr=phr`);
    const page = await fresh.get(toStepUp.headers.location);
    expectPage(page, 200);
    expect(parseForms(page.text).map((f) => f.action)).toEqual(['/login/passkey']);
    const form = parseForms(page.text)[0].hidden;
    const options = await fresh.postJson('/login/passkey/options', { csrf: form.csrf, step: 'second-factor' });
    const answer = authenticator.authenticate(options.body, { origin: issuer.origin });
    const back = await fresh.post('/login/passkey', { ...form, response: JSON.stringify(answer) });
    expect(back.status).toBe(303);
    const done = await fresh.get(back.headers.location);
    const tokens = await tokensFrom(config, done.headers.location, req);
    expect(tokens.claims()).toMatchObject({ acr: 'phr', amr: ['pwd', 'otp', 'hwk', 'user', 'mfa'] });
  });

  it("holds a client's own minimum level: step-up, interaction_required with prompt=none, unmet_authentication_requirements without a factor", async () => {
    const strict = await registerClient(t, { trusted: true, minimumAcr: 'aal2' });
    expect(strict.minimum_acr).toBe('aal2');
    const config = await relyingPartyOf(issuer, strict);

    const { browser } = await signedIn(t);
    // No factor at all: the client hears that the person cannot reach the level.
    const none = await request(config);
    const unmet = await browser.get(none.path);
    expect(unmet.status).toBe(302);
    const unmetAt = new URL(unmet.headers.location);
    expect(unmetAt.searchParams.get('error')).toBe('unmet_authentication_requirements');
    expect(unmetAt.searchParams.get('state')).toBe(none.state);

    await addAuthenticator(browser);
    const silent = await browser.get((await request(config, { prompt: 'none' })).path);
    expect(new URL(silent.headers.location).searchParams.get('error')).toBe('interaction_required');
    const req = await request(config);
    const toStepUp = await browser.get(req.path);
    expect(toStepUp.headers.location).toMatch(/^\/login\/step-up\?return_to=.+&acr=aal2$/);
    // A weaker acr_values does not lower the client's own minimum.
    const weaker = await browser.get((await request(config, { acr_values: 'aal1' })).path);
    expect(weaker.headers.location).toMatch(/^\/login\/step-up\?/);
    // An admin API client can be given one; an unknown level is refused.
    const admin = await t.createUser({ role: 'admin' });
    const adminToken = await t.token(admin.id, ['clients:admin']);
    const bad = await t
      .http()
      .post('/admin/clients')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ name: 'X', redirect_uris: [REDIRECT_URI], minimum_acr: 'aal9' });
    expect(bad.status).toBe(400);
    const good = await t
      .http()
      .post('/admin/clients')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ name: 'X', redirect_uris: [REDIRECT_URI], minimum_acr: 'phr' });
    expect(good.status).toBe(201);
    expect(good.body.minimum_acr).toBe('phr');
  });

  it('takes a passkey for a sign-in too old for max_age: the person confirms it is them, no password typed', async () => {
    const view = await registerClient(t, { trusted: true });
    const config = await relyingPartyOf(issuer, view);
    const { user, browser } = await signedIn(t);
    const authenticator = await addPasskey(browser);
    const req = await request(config, { max_age: '0' });
    const toReauth = await browser.get(req.path);
    expect(toReauth.status).toBe(302);
    const withoutMaxAge = req.path.replace(/&max_age=0/, '');
    expect(toReauth.headers.location).toBe(`/login/step-up?return_to=${encodeURIComponent(withoutMaxAge)}&reauth=1`);
    const page = await browser.get(toReauth.headers.location);
    expectPage(page, 200);
    expect(page.text).toContain('<h1>Confirm it is you</h1>');
    const form = parseForms(page.text)[0];
    expect(form.action).toBe('/login/passkey');
    expect(form.hidden).toMatchObject({ step: 'reauth', return_to: withoutMaxAge });
    // Another person's passkey does not confirm this one.
    const other = await signedIn(t);
    const stranger = await addPasskey(other.browser);
    const options = async () => (await browser.postJson('/login/passkey/options', { csrf: form.hidden.csrf, step: 'reauth' })).body;
    const refused = await browser.post('/login/passkey', {
      ...form.hidden,
      response: JSON.stringify(stranger.authenticate(await options(), { origin: issuer.origin })),
    });
    expectPage(refused, 401);
    const before = Date.now();
    const back = await browser.post('/login/passkey', {
      ...form.hidden,
      response: JSON.stringify(authenticator.authenticate(await options(), { origin: issuer.origin })),
    });
    expect(back.status).toBe(303);
    expect(back.headers.location).toBe(withoutMaxAge);
    const done = await browser.get(back.headers.location);
    const tokens = await tokensFrom(config, done.headers.location, req);
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ sub: user.id, acr: 'phr', amr: ['hwk', 'user', 'mfa'] });
    expect(claims.auth_time! * 1000).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    // Without a passkey, max_age still leads to the login form.
    const plain = await signedIn(t);
    const toLogin = await plain.browser.get((await request(config, { max_age: '0' })).path);
    expect(toLogin.headers.location).toMatch(/^\/login\?return_to=/);
  });

  it('ends a step-up with the session it strengthens: after a logout, the factor alone signs no one in', async () => {
    const view = await registerClient(t, { trusted: true });
    const config = await relyingPartyOf(issuer, view);
    const { browser } = await signedIn(t);
    const totp = await addAuthenticator(browser);
    const req = await request(config, { acr_values: 'aal2' });
    const page = await browser.get((await browser.get(req.path)).headers.location);
    expectPage(page, 200);
    // The person walks away and signs out; the next one at the computer has the code form and the cookie.
    const apps = await browser.get('/account/apps');
    const signOut = await browser.post('/logout', parseForms(apps.text).find((f) => f.action === '/logout')!.hidden);
    expect(signOut.status).toBe(303);
    expect(browser.cookies.has('oauth_session')).toBe(false);
    const attempt = await browser.submit(page, { code: totp.generate({ timestamp: Date.now() + 30_000 }) });
    expectPage(attempt, 401);
    expect(browser.cookies.has('oauth_session')).toBe(false);
  });

  it('shows, not redirects, unmet_authentication_requirements to a client that chose its own redirect URIs', async () => {
    // A client that registered itself (RFC 7591): its redirect URI is anyone's choice.
    const registered = await registerClient(t, { registrationTokenHash: 'a'.repeat(64), isPublic: true });
    const { browser } = await signedIn(t);
    const path = `/authorize?response_type=code&client_id=${encodeURIComponent(registered.client_id)}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&scope=users:read&state=s&code_challenge=${'x'.repeat(43)}&code_challenge_method=S256&acr_values=phr`;
    const res = await browser.get(path);
    expectPage(res, 400);
    expect(res.text).toContain('unmet_authentication_requirements: The user has no way to sign in at level phr.');
  });

  it('passes over unknown acr_values, refuses malformed ones, and sends a step-up page without a session to the login form', async () => {
    const view = await registerClient(t, { trusted: true });
    const config = await relyingPartyOf(issuer, view);
    const { browser } = await signedIn(t);
    const unknown = await browser.get((await request(config, { acr_values: 'urn:example:gold' })).path);
    expect(new URL(unknown.headers.location).searchParams.get('code')).not.toBeNull();
    const malformed = await browser.get((await request(config, { acr_values: 'aal2\u0007' })).path);
    expect(new URL(malformed.headers.location).searchParams.get('error')).toBe('invalid_request');

    const anonymous = await new Browser(t).get('/login/step-up?return_to=%2Faccount%2Fapps&acr=aal2');
    expect(anonymous.status).toBe(302);
    expect(anonymous.headers.location).toBe('/login?return_to=%2Faccount%2Fapps');
    const noFactor = await browser.get('/login/step-up?return_to=%2Faccount%2Fapps&acr=phr');
    expectPage(noFactor, 403);
    expect(noFactor.text).toContain('This needs a passkey, and your account has none yet.');
  });
});
