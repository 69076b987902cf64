import { hashSecret } from '../../src/crypto/secrets';
import { randomUUID } from 'node:crypto';
import { SignJWT, generateKeyPair } from 'jose';
import * as client from 'openid-client';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { SESSION_COOKIE } from '../../src/oauth/interaction/cookies';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  decodeJwt,
  login,
  parseForm,
  pkcePair,
  registerClient,
  signedIn,
  sleep,
} from '../support/oauth';
import { authorizationRequest, relyingPartyOf } from '../support/openid';
import { TEST_PASSWORD, type TestApp, createListeningTestApp } from '../support/test-app';

const LOGOUT_URI = 'https://client.example/signed-out';

/**
 * OpenID Connect Core 1.0 authentication request parameters (prompt, max_age, login_hint) and RP-Initiated Logout
 * 1.0, with openid-client building the requests and the test browser answering the pages.
 */
describe('OpenID Connect prompt, max_age, login_hint and RP-initiated logout', () => {
  let t: TestApp;
  let issuer: URL;

  beforeAll(async () => {
    const listening = await createListeningTestApp(NO_RATE_LIMITS);
    t = listening;
    issuer = new URL(listening.origin);
  });
  afterAll(() => t.close());

  const relyingParty = (view: ClientView) => relyingPartyOf(issuer, view);

  /** Runs an authorization request to its callback (answering the consent page) and redeems the code. */
  async function idTokenClaims(browser: Browser, config: client.Configuration, params: Record<string, string> = {}) {
    const request = await authorizationRequest(config, params);
    let res = await browser.get(request.path);
    if (res.status === 200) res = await browser.submit(res, { decision: 'allow' });
    expect(res.status, res.text).toBe(res.request.method === 'POST' ? 303 : 302);
    const tokens = await client.authorizationCodeGrant(config, new URL(res.headers.location), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
      idTokenExpected: true,
    });
    return { claims: tokens.claims()!, idToken: tokens.id_token! };
  }

  /** The error parameters of a redirect to the client's redirect URI. */
  function clientError(res: { status: number; headers: Record<string, string>; text: string }) {
    expect(res.status, res.text).toBe(302);
    const location = new URL(res.headers.location);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    return Object.fromEntries(location.searchParams);
  }

  /** Where a redirect to the login page comes back to, and the hint it carries. */
  function loginRedirect(res: { status: number; headers: Record<string, string> }) {
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location, issuer);
    expect(location.pathname).toBe('/login');
    return { returnTo: new URL(location.searchParams.get('return_to')!, issuer), loginHint: location.searchParams.get('login_hint') };
  }

  async function logoutEvents(userId: string) {
    return t.app
      .get(DataSource)
      .query(`SELECT client_id, details FROM audit_events WHERE type = 'logout' AND user_id = '${userId}' ORDER BY at`);
  }

  describe('prompt=none', () => {
    it('answers login_required at the redirect URI, with state and iss, when nobody is signed in', async () => {
      for (const trusted of [true, false]) {
        const config = await relyingParty(await registerClient(t, { trusted }));
        const request = await authorizationRequest(config, { prompt: 'none' });
        const q = clientError(await new Browser(t).get(request.path));
        expect(q).toEqual({
          error: 'login_required',
          error_description: 'The user is not signed in, or not recently enough.',
          state: request.state,
          iss: issuer.origin,
        });
      }
    });

    it('answers consent_required when the user has not allowed the client, and a code once they have', async () => {
      const view = await registerClient(t, { trusted: false });
      const config = await relyingParty(view);
      const { browser, user } = await signedIn(t);
      const request = await authorizationRequest(config, { prompt: 'none' });
      const q = clientError(await browser.get(request.path));
      expect(q).toMatchObject({ error: 'consent_required', state: request.state });

      await idTokenClaims(browser, config); // allows on the consent page
      const silent = await idTokenClaims(browser, config, { prompt: 'none' });
      expect(silent.claims.sub).toBe(user.id);
    });

    it('signs in silently for a trusted client with a session', async () => {
      const config = await relyingParty(await registerClient(t, { trusted: true }));
      const { browser, user } = await signedIn(t);
      expect((await idTokenClaims(browser, config, { prompt: 'none' })).claims.sub).toBe(user.id);
    });

    it('refuses unknown prompt values, none with another value and a malformed max_age with invalid_request', async () => {
      const config = await relyingParty(await registerClient(t, { trusted: true }));
      const { browser } = await signedIn(t);
      for (const [params, description] of [
        [{ prompt: 'bogus' }, 'prompt bogus is not supported.'],
        [{ prompt: 'none login' }, 'prompt=none cannot be combined with other values.'],
        [{ prompt: 'consent none' }, 'prompt=none cannot be combined with other values.'],
        [{ max_age: '-1' }, 'max_age must be a whole number of seconds.'],
        [{ max_age: '1.5' }, 'max_age must be a whole number of seconds.'],
      ] as const) {
        const request = await authorizationRequest(config, params);
        expect(clientError(await browser.get(request.path))).toEqual({
          error: 'invalid_request',
          error_description: description,
          state: request.state,
          iss: issuer.origin,
        });
      }
    });

    it('shows a self-registered client its login_required as a page, never a redirect', async () => {
      // As dynamic registration (RFC 7591) stores it: with the hash of its registration access token.
      const config = await relyingParty(await registerClient(t, { registrationTokenHash: 'a'.repeat(64) }));
      const request = await authorizationRequest(config, { prompt: 'none' });
      const res = await new Browser(t).get(request.path);
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('login_required');
    });
  });

  describe('prompt=login and max_age', () => {
    it('prompt=login shows the login page despite a session; the new login moves auth_time and keeps the sid', async () => {
      const config = await relyingParty(await registerClient(t, { trusted: true }));
      const { browser, user } = await signedIn(t);
      const first = await idTokenClaims(browser, config);
      const firstCookie = browser.cookies.get(SESSION_COOKIE);
      const csrfOf = async (cookie: string | undefined) =>
        (
          (await t.app.get(DataSource).query(`SELECT csrf_token FROM sessions WHERE id = '${hashSecret(cookie!)}'`)) as {
            csrf_token: string;
          }[]
        )[0]?.csrf_token;
      const firstCsrf = await csrfOf(firstCookie);
      expect(firstCsrf).toMatch(/\S/);
      await sleep(1100);

      const request = await authorizationRequest(config, { prompt: 'login' });
      const { returnTo } = loginRedirect(await browser.get(request.path));
      expect(returnTo.pathname).toBe('/authorize');
      expect(returnTo.searchParams.has('prompt')).toBe(false);
      expect(returnTo.searchParams.get('state')).toBe(request.state);
      // Only prompt and max_age leave the return URL; every other parameter stays as sent, byte for byte, even an
      // escape that is not UTF-8 and a name written with an escape.
      const odd = `${request.path.replace('&prompt=login', '&%70rompt=login')}&max_age=0&state2=%E0%A4`;
      expect(odd).toContain('&%70rompt=login');
      const oddReturn = loginRedirect(await browser.get(odd)).returnTo;
      expect(oddReturn.pathname + oddReturn.search).toBe(
        request.path
          .split('&')
          .filter((pair) => !pair.startsWith('prompt='))
          .join('&') + '&state2=%E0%A4',
      );
      const signIn = await login(browser, user.email, TEST_PASSWORD, returnTo.pathname + returnTo.search);
      expect(signIn.status).toBe(303);
      expect(signIn.headers.location).toBe(returnTo.pathname + returnTo.search);
      expect(browser.cookies.get(SESSION_COOKIE)).not.toBe(firstCookie);
      // The new login also replaces the session's CSRF token: one that leaked before it does not carry over.
      const secondCsrf = await csrfOf(browser.cookies.get(SESSION_COOKIE));
      expect(secondCsrf).toMatch(/\S/);
      expect(secondCsrf).not.toBe(firstCsrf);

      const callback = await browser.get(signIn.headers.location);
      const tokens = await client.authorizationCodeGrant(config, new URL(callback.headers.location), {
        pkceCodeVerifier: request.verifier,
        expectedState: request.state,
        expectedNonce: request.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      expect(claims.auth_time).toBeGreaterThan(first.claims.auth_time!);
      expect(claims.sid).toBe(first.claims.sid);
      // The session's login time is the new one: later ID tokens carry it too.
      expect((await idTokenClaims(browser, config)).claims.auth_time).toBe(claims.auth_time);
    });

    it('max_age sends a session whose login is older to the login page (prompt=none: login_required), for trusted clients and others', async () => {
      const trusted = await relyingParty(await registerClient(t, { trusted: true }));
      const other = await relyingParty(await registerClient(t, { trusted: false }));
      const { browser, user } = await signedIn(t);
      const fresh = await idTokenClaims(browser, trusted, { max_age: '1' });
      await idTokenClaims(browser, other, { max_age: '1' }); // consents
      await sleep(1100);

      for (const config of [trusted, other]) {
        const request = await authorizationRequest(config, { max_age: '1' });
        const { returnTo } = loginRedirect(await browser.get(request.path));
        expect(returnTo.searchParams.has('max_age')).toBe(false);
        expect(returnTo.searchParams.get('nonce')).toBe(request.nonce);
        const silent = await authorizationRequest(config, { max_age: '1', prompt: 'none' });
        expect(clientError(await browser.get(silent.path))).toMatchObject({ error: 'login_required', state: silent.state });
        const forced = await authorizationRequest(config, { max_age: '0' });
        loginRedirect(await browser.get(forced.path));
      }
      // A long max_age is satisfied by the session's login.
      expect((await idTokenClaims(browser, trusted, { max_age: '3600' })).claims.auth_time).toBe(fresh.claims.auth_time);

      expect((await login(browser, user.email)).status).toBe(303);
      const again = await idTokenClaims(browser, other, { max_age: '1' });
      expect(again.claims.auth_time).toBeGreaterThan(fresh.claims.auth_time!);
    });
  });

  describe('prompt=consent', () => {
    it('shows the consent page even after consent, and to a trusted client', async () => {
      const { browser } = await signedIn(t);
      for (const trusted of [false, true]) {
        const config = await relyingParty(await registerClient(t, { trusted }));
        if (!trusted) await idTokenClaims(browser, config);
        const request = await authorizationRequest(config, { prompt: 'consent' });
        const page = await browser.get(request.path);
        expect(page.status).toBe(200);
        expect(page.text).toContain('wants access to your account');
        const form = parseForm(page.text);
        expect(form.action).toBe('/authorize/consent');
        expect(form.hidden).not.toHaveProperty('prompt');
        const res = await browser.submit(page, { decision: 'allow' });
        expect(res.status).toBe(303);
        expect(new URL(res.headers.location).searchParams.get('code')).toEqual(expect.any(String));
      }
    });
  });

  describe('login_hint and ui_locales', () => {
    it('prefills the login form with login_hint, HTML-escaped, and uses it for nothing else', async () => {
      const config = await relyingParty(await registerClient(t, { trusted: true }));
      const attack = '"><script>alert(1)</script>@evil.example';
      const request = await authorizationRequest(config, { login_hint: attack, ui_locales: 'de fr' });
      const browser = new Browser(t);
      const redirect = await browser.get(request.path);
      expect(loginRedirect(redirect).loginHint).toBe(attack);
      const page = await browser.get(redirect.headers.location);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain('<script>alert(1)');
      expect(page.text).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@evil.example"');
      expect(parseForm(page.text).inputs.email).toBe('email');

      const plain = await browser.get(`/login?login_hint=${encodeURIComponent('ada@example.com')}`);
      expect(plain.text).toContain('value="ada@example.com"');
      const control = await browser.get(`/login?login_hint=${encodeURIComponent('a\u0000b@example.com')}`);
      expect(control.text).toContain('autocomplete="username" required maxlength="254" value=""');
    });
  });

  /** An ID token this server could have issued (its active key unless `kid` names another). */
  async function idTokenOf(sub: string, clientId: string, opts: { kid?: string; privateKey?: Parameters<SignJWT['sign']>[0] } = {}) {
    const key = t.app.get(SigningKeysService).activeKey();
    return new SignJWT({ sid: randomUUID() })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: opts.kid ?? key.kid })
      .setIssuer(issuer.origin)
      .setSubject(sub)
      .setAudience(clientId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(opts.privateKey ?? key.privateKey);
  }

  describe('id_token_hint, request objects and redirect_uri at /authorize', () => {
    it("signs in silently when the hint names the session's user, and needs a login when it names another (prompt=none: login_required)", async () => {
      for (const trusted of [true, false]) {
        const view = await registerClient(t, { trusted });
        const config = await relyingParty(view);
        const { browser, user } = await signedIn(t);
        if (!trusted) await idTokenClaims(browser, config); // allows on the consent page
        const mine = await idTokenClaims(browser, config, { prompt: 'none', id_token_hint: await idTokenOf(user.id, view.client_id) });
        expect(mine.claims.sub).toBe(user.id);

        const someoneElse = await idTokenOf(randomUUID(), view.client_id);
        const silent = await authorizationRequest(config, { prompt: 'none', id_token_hint: someoneElse });
        expect(clientError(await browser.get(silent.path))).toEqual({
          error: 'login_required',
          error_description: 'The user is not signed in, or not recently enough.',
          state: silent.state,
          iss: issuer.origin,
        });
        const interactive = await authorizationRequest(config, { id_token_hint: someoneElse });
        expect(loginRedirect(await browser.get(interactive.path)).returnTo.searchParams.get('id_token_hint')).toBe(someoneElse);
      }
    });

    it('refuses a forged hint, an access token and a hint of another client with invalid_request; a hint signed by a key that has left is ignored', async () => {
      const view = await registerClient(t, { trusted: true });
      const other = await registerClient(t, { trusted: true });
      const config = await relyingParty(view);
      const { browser, user } = await signedIn(t);
      const { privateKey } = await generateKeyPair('RS256');
      for (const [hint, description] of [
        [await idTokenOf(user.id, view.client_id, { privateKey }), 'id_token_hint is not an ID token issued by this server.'],
        [await t.token(user.id, 'openid'), 'id_token_hint is not an ID token issued by this server.'],
        ['garbage', 'id_token_hint is not an ID token issued by this server.'],
        [await idTokenOf(user.id, other.client_id), 'id_token_hint was issued to another client.'],
      ] as const) {
        const request = await authorizationRequest(config, { prompt: 'none', id_token_hint: hint });
        expect(clientError(await browser.get(request.path)), description).toEqual({
          error: 'invalid_request',
          error_description: description,
          state: request.state,
          iss: issuer.origin,
        });
      }
      // A key id this server does not hold (a retired key): the hint cannot be checked, so it does not count.
      const stale = await idTokenOf(randomUUID(), view.client_id, { kid: 'retired-key', privateKey });
      expect((await idTokenClaims(browser, config, { prompt: 'none', id_token_hint: stale })).claims.sub).toBe(user.id);
    });

    it('refuses request with request_not_supported, and a request_uri this server did not hand out with an error page', async () => {
      const config = await relyingParty(await registerClient(t, { trusted: true }));
      const { browser } = await signedIn(t);
      for (const [params, error, description] of [
        [{ request: 'eyJhbGciOiJub25lIn0.e30.' }, 'request_not_supported', 'Request objects (request) are not supported.'],
      ] as const) {
        // Added to the request as sent: openid-client would make a request-object request of the whole of it.
        const request = await authorizationRequest(config);
        const res = await browser.get(`${request.path}&${new URLSearchParams(params)}`);
        expect(clientError(res)).toEqual({ error, error_description: description, state: request.state, iss: issuer.origin });
      }
      // A request_uri names a pushed request (RFC 9126) only: any other is unknown, and nothing is redirected.
      const request = await authorizationRequest(config);
      const res = await browser.get(`${request.path}&${new URLSearchParams({ request_uri: 'https://client.example/request.jwt' })}`);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.text).toContain('The request_uri is unknown, expired, used already, or another client&#39;s.');
    });

    it('needs redirect_uri in an OpenID Connect request even from a client with one redirect URI (an error page, no redirect)', async () => {
      const view = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const query = {
        response_type: 'code',
        client_id: view.client_id,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      };
      const res = await browser.get(`/authorize?${new URLSearchParams({ ...query, scope: 'openid' })}`);
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('redirect_uri is required in an OpenID Connect request (scope openid).');
      // A plain OAuth request may still leave it out.
      const plain = await browser.get(`/authorize?${new URLSearchParams({ ...query, scope: 'orders:read' })}`);
      expect(plain.status).toBe(302);
      expect(new URL(plain.headers.location).searchParams.get('code')).toEqual(expect.any(String));
    });
  });

  describe('RP-initiated logout', () => {
    async function signedInWithIdToken(opts: { postLogoutRedirectUris?: string[] } = {}) {
      const view = await registerClient(t, { trusted: true, postLogoutRedirectUris: opts.postLogoutRedirectUris ?? [LOGOUT_URI] });
      const config = await relyingParty(view);
      const { browser, user } = await signedIn(t);
      const { claims, idToken } = await idTokenClaims(browser, config);
      return { view, config, browser, user, claims, idToken };
    }

    async function expectSignedOut(browser: Browser, config: client.Configuration) {
      const request = await authorizationRequest(config, { prompt: 'none' });
      expect(clientError(await browser.get(request.path))).toMatchObject({ error: 'login_required' });
    }

    it('is in the discovery document, which openid-client reads', async () => {
      const { config } = await signedInWithIdToken();
      expect(config.serverMetadata().end_session_endpoint).toBe(`${issuer.origin}/end-session`);
    });

    it('with an ID token of the session: ends it and redirects to the registered post_logout_redirect_uri with state', async () => {
      const { view, config, browser, user, idToken } = await signedInWithIdToken();
      const state = client.randomState();
      const url = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: LOGOUT_URI, state });
      expect(url.pathname).toBe('/end-session');
      const res = await browser.get(url.pathname + url.search);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${LOGOUT_URI}?state=${state}`);
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(false);
      expect(await logoutEvents(user.id)).toEqual([{ client_id: view.client_id, details: '{"via":"end session"}' }]);
      await expectSignedOut(browser, config);
    });

    it('takes a POSTed form as well (303), an expired ID token as the hint, and ends on a "Signed out" page without a redirect URI', async () => {
      const { view, browser, user, claims } = await signedInWithIdToken();
      const key = t.app.get(SigningKeysService).activeKey();
      const now = Math.floor(Date.now() / 1000);
      const expired = await new SignJWT({ sid: claims.sid, auth_time: claims.auth_time })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
        .setIssuer(issuer.origin)
        .setSubject(user.id)
        .setAudience(view.client_id)
        .setIssuedAt(now - 7200)
        .setExpirationTime(now - 3600)
        .sign(key.privateKey);
      // A form POST (a relying party's, cross-site: no SameSite=Lax cookie with it) becomes the same top-level GET.
      const posted = await browser.post('/end-session', { id_token_hint: expired, client_id: view.client_id });
      expect(posted.status).toBe(303);
      expect(posted.headers.location).toBe(`/end-session?${new URLSearchParams({ id_token_hint: expired, client_id: view.client_id })}`);
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(true);
      const res = await browser.get(posted.headers.location);
      expect(res.status).toBe(200);
      expect(res.text).toContain('<h1>Signed out</h1>');
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(false);
      // A parameter sent twice is refused there and then, with an error page (never a redirect).
      const twice = await t.http().post('/end-session').type('form').send('state=a&state=b');
      expect(twice.status).toBe(400);
      expect(twice.headers['content-type']).toMatch(/^text\/html/);
      expect(twice.text).toContain('state must be sent once, as text.');
      const query = new URLSearchParams({ id_token_hint: expired, post_logout_redirect_uri: LOGOUT_URI, state: 's' });
      const again = await browser.get(`/end-session?${query}`);
      expect(again.status).toBe(302);
      expect(again.headers.location).toBe(`${LOGOUT_URI}?state=s`);
    });

    it("refuses an unregistered post_logout_redirect_uri, a forged or foreign hint and a client_id that is not the hint's with an error page, never a redirect", async () => {
      const { view, config, browser, user, idToken } = await signedInWithIdToken();
      const other = await registerClient(t, { postLogoutRedirectUris: ['https://other.example/bye'] });
      const { privateKey } = await generateKeyPair('RS256');
      const forged = await new SignJWT({ sid: 'x' })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: decodeJwt(idToken).header.kid as string })
        .setIssuer(issuer.origin)
        .setSubject(user.id)
        .setAudience(view.client_id)
        .setExpirationTime('1h')
        .sign(privateKey);
      const accessToken = await t.token(user.id, 'openid');
      for (const [params, message] of [
        [
          { id_token_hint: idToken, post_logout_redirect_uri: 'https://evil.example/' },
          'post_logout_redirect_uri is not registered for this client.',
        ],
        [
          { client_id: view.client_id, post_logout_redirect_uri: `${LOGOUT_URI}/x` },
          'post_logout_redirect_uri is not registered for this client.',
        ],
        [{ post_logout_redirect_uri: LOGOUT_URI }, 'post_logout_redirect_uri needs client_id or id_token_hint to name the client.'],
        [{ id_token_hint: forged }, 'id_token_hint is not an ID token issued by this server.'],
        [{ id_token_hint: accessToken }, 'id_token_hint is not an ID token issued by this server.'],
        [{ id_token_hint: 'garbage' }, 'id_token_hint is not an ID token issued by this server.'],
        [{ id_token_hint: idToken, client_id: other.client_id }, 'client_id is not the client of id_token_hint.'],
        [{ client_id: 'no-such-client' }, 'The client (client_id) is not registered.'],
      ] as const) {
        const res = await browser.get(`/end-session?${new URLSearchParams(params)}`);
        expect(res.status, message).toBe(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.text).toContain(message);
      }
      const repeated = await browser.get(`/end-session?state=a&state=b`);
      expect(repeated.status).toBe(400);
      expect(repeated.text).toContain('state was sent more than once.');
      // Nothing ended: the session still signs in silently.
      expect((await idTokenClaims(browser, config, { prompt: 'none' })).claims.sub).toBe(user.id);
      expect(await logoutEvents(user.id)).toEqual([]);
    });

    it('without a hint: asks "Sign out?" on a page whose form needs the CSRF token (403 without), then signs out and redirects with state', async () => {
      const { view, config, browser, user } = await signedInWithIdToken();
      const url = client.buildEndSessionUrl(config, { post_logout_redirect_uri: LOGOUT_URI, state: 'st-1' });
      const page = await browser.get(url.pathname + url.search);
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(page.headers['referrer-policy']).toBe('no-referrer');
      expect(page.text).toContain('<h1>Sign out?</h1>');
      expect(page.text).toContain('<strong>Photo Printer</strong> asks to sign you out of your account here.');
      const form = parseForm(page.text);
      expect(form.action).toBe('/end-session/confirm');
      expect(form.hidden).toEqual({
        client_id: view.client_id,
        post_logout_redirect_uri: LOGOUT_URI,
        state: 'st-1',
        csrf: expect.any(String),
      });
      expect(form.buttons).toEqual([
        { name: 'decision', value: 'stay' },
        { name: 'decision', value: 'logout' },
      ]);

      const noCsrf = await browser.submit(page, { decision: 'logout', csrf: undefined });
      expect(noCsrf.status).toBe(403);
      const badCsrf = await browser.submit(page, { decision: 'logout', csrf: 'x'.repeat(32) });
      expect(badCsrf.status).toBe(403);
      expect((await idTokenClaims(browser, config, { prompt: 'none' })).claims.sub).toBe(user.id);

      const done = await browser.submit(page, { decision: 'logout' });
      expect(done.status).toBe(303);
      expect(done.headers.location).toBe(`${LOGOUT_URI}?state=st-1`);
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(false);
      expect(await logoutEvents(user.id)).toEqual([{ client_id: view.client_id, details: '{"via":"end session confirmed"}' }]);
      await expectSignedOut(browser, config);
      // The form again, with no session any more: refused.
      expect((await browser.submit(page, { decision: 'logout' })).status).toBe(403);
    });

    it('asks as well with a hint of another session, and "Stay signed in" keeps the session', async () => {
      const { config, browser, user, idToken } = await signedInWithIdToken();
      const second = new Browser(t);
      expect((await login(second, user.email)).status).toBe(303);
      const url = client.buildEndSessionUrl(config, { id_token_hint: idToken });
      const page = await second.get(url.pathname + url.search);
      expect(page.status).toBe(200);
      expect(page.text).toContain('<h1>Sign out?</h1>');
      const stay = await second.submit(page, { decision: 'stay' });
      expect(stay.status).toBe(200);
      expect(stay.text).toContain('<h1>Still signed in</h1>');
      expect((await idTokenClaims(second, config, { prompt: 'none' })).claims.sub).toBe(user.id);
      const undecided = await second.submit(page, { decision: undefined });
      expect(undecided.status).toBe(400);
      // The first session, whose hint it is, is untouched too.
      expect((await idTokenClaims(browser, config, { prompt: 'none' })).claims.sub).toBe(user.id);
    });

    it('asks "Sign out?" when the hint was signed by a key that has left (stale), rather than refusing', async () => {
      const { view, browser, user } = await signedInWithIdToken();
      const { privateKey } = await generateKeyPair('RS256');
      const stale = await idTokenOf(user.id, view.client_id, { kid: 'retired-key', privateKey });
      const res = await browser.get(`/end-session?${new URLSearchParams({ id_token_hint: stale, client_id: view.client_id })}`);
      expect(res.status).toBe(200);
      expect(res.text).toContain('<h1>Sign out?</h1>');
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(true);
    });

    it('with no session: nothing to end, the redirect goes ahead', async () => {
      const { config, idToken } = await signedInWithIdToken();
      const url = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: LOGOUT_URI, state: randomUUID() });
      const res = await new Browser(t).get(url.pathname + url.search);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${LOGOUT_URI}?state=${url.searchParams.get('state')}`);
    });
  });
});
