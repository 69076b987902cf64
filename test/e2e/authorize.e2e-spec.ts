import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { defaultClientScope, scopeDescription } from '../../src/auth/scopes';
import {
  Browser,
  ERROR_DESCRIPTION,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  authorizeCode,
  authorizePath,
  login,
  parseForm,
  pkcePair,
  redirectParams,
  registerClient,
  signedIn,
  token,
} from '../support/oauth';
import { TEST_PASSWORD, type TestApp, createTestApp } from '../support/test-app';

/** The answer to a request whose client or redirect URI cannot be trusted: an HTML page, never a redirect. */
function expectErrorPage(res: Response): void {
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.headers.location).toBeUndefined();
  expect(res.text).toMatch(/<html/i);
}

function expectFramingAndReferrerProtection(res: Response): void {
  expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
  expect(res.headers['referrer-policy']).toBe('no-referrer');
}

describe('GET /authorize', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  describe('1. a client or redirect URI that cannot be trusted is answered with a 400 HTML page, never a redirect', () => {
    it('answers 400 HTML when client_id is missing', async () => {
      const res = await new Browser(t).get(authorizePath({ response_type: 'code', redirect_uri: REDIRECT_URI, state: 'x' }));
      expectErrorPage(res);
    });

    it('answers 400 HTML when client_id is not registered', async () => {
      const res = await new Browser(t).get(
        authorizePath({ response_type: 'code', client_id: 'no-such-client', redirect_uri: REDIRECT_URI, state: 'x' }),
      );
      expectErrorPage(res);
    });

    it('answers 400 HTML when redirect_uri is not registered for the client, even if the request has other errors', async () => {
      const client = await registerClient(t);
      for (const redirectUri of [
        'https://evil.example/cb',
        `${REDIRECT_URI}/`,
        `${REDIRECT_URI}?x=1`,
        'https://CLIENT.example/cb',
        `${REDIRECT_URI}#f`,
      ]) {
        const res = await new Browser(t).get(
          authorizePath({ response_type: 'token', client_id: client.client_id, redirect_uri: redirectUri, state: 'x' }),
        );
        expectErrorPage(res);
      }
    });

    it('answers 400 HTML when redirect_uri is missing and the client has more than one registered', async () => {
      const client = await registerClient(t, { redirectUris: [REDIRECT_URI, 'https://client.example/other'] });
      const res = await new Browser(t).get(authorizePath({ response_type: 'code', client_id: client.client_id, state: 'x' }));
      expectErrorPage(res);
    });

    it('uses the only registered redirect_uri when it is missing', async () => {
      const client = await registerClient(t);
      const res = await new Browser(t).get(authorizePath({ response_type: 'token', client_id: client.client_id, state: 'x' }));
      expect(redirectParams(res).get('error')).toBe('unsupported_response_type');
    });

    it('answers 400 HTML when client_id or redirect_uri is repeated', async () => {
      const client = await registerClient(t);
      const twiceClient = await new Browser(t).get(
        authorizePath([
          ['response_type', 'code'],
          ['client_id', client.client_id],
          ['client_id', client.client_id],
          ['redirect_uri', REDIRECT_URI],
        ]),
      );
      expectErrorPage(twiceClient);
      const twiceRedirect = await new Browser(t).get(
        authorizePath([
          ['response_type', 'code'],
          ['client_id', client.client_id],
          ['redirect_uri', REDIRECT_URI],
          ['redirect_uri', REDIRECT_URI],
        ]),
      );
      expectErrorPage(twiceRedirect);
    });
  });

  describe('2. other errors go back to the client: 302 with error, error_description, state and iss', () => {
    let client: ClientView;
    let narrow: ClientView;
    let publicClient: ClientView;

    beforeAll(async () => {
      client = await registerClient(t);
      narrow = await registerClient(t, { scope: 'orders:read' });
      publicClient = await registerClient(t, { isPublic: true });
    });

    async function expectRedirectError(c: ClientView, params: Record<string, string | undefined> | [string, string][], error: string) {
      const entries: [string, string][] = Array.isArray(params)
        ? params
        : (Object.entries({ client_id: c.client_id, redirect_uri: REDIRECT_URI, state: 'st&ate=1', ...params }).filter(
            (e): e is [string, string] => e[1] !== undefined,
          ) as [string, string][]);
      // No session: an error is answered before the login is asked for.
      const res = await new Browser(t).get(authorizePath(entries));
      expect(res.status).toBe(302);
      // A bare redirect: the Location header and no body to read.
      expect(res.headers['content-length']).toBe('0');
      expect(res.text ?? '').toBe('');
      const q = redirectParams(res);
      expect(q.get('error')).toBe(error);
      expect(q.get('error_description')).toMatch(ERROR_DESCRIPTION);
      expect(q.get('state')).toBe('st&ate=1');
      expect(q.get('iss')).toBe(t.config.issuer);
      expect(q.has('code')).toBe(false);
    }

    it('redirects unsupported_response_type for a response_type other than code', async () => {
      await expectRedirectError(client, { response_type: 'token' }, 'unsupported_response_type');
    });

    it('redirects invalid_request when response_type is missing', async () => {
      await expectRedirectError(client, { response_type: undefined }, 'invalid_request');
    });

    it('redirects invalid_scope for an unknown scope, even next to known ones', async () => {
      await expectRedirectError(client, { response_type: 'code', scope: 'orders:read admin' }, 'invalid_scope');
    });

    it("redirects invalid_scope when none of the scopes asked for is the client's", async () => {
      await expectRedirectError(narrow, { response_type: 'code', scope: 'users:read users:write' }, 'invalid_scope');
    });

    it("narrows a request to the client's scopes (RFC 6749 3.3): the consent page, the code and the token say what is granted", async () => {
      const { browser } = await signedIn(t);
      const pkce = pkcePair();
      const params = { scope: 'orders:read users:read users:write', code_challenge: pkce.challenge, code_challenge_method: 'S256' };
      const page = await browser.get(authorizePath({ response_type: 'code', client_id: narrow.client_id, state: 's', ...params }));
      expect(page.status).toBe(200);
      expect(parseForm(page.text).hidden.scope).toBe('orders:read');
      const code = await authorizeCode(browser, narrow, params);
      const issued = await token(t, narrow, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
      expect(issued.status).toBe(200);
      expect(issued.body.scope).toBe('orders:read');
    });

    it('redirects invalid_request for code_challenge_method=plain', async () => {
      const { verifier } = pkcePair();
      await expectRedirectError(
        client,
        { response_type: 'code', code_challenge: verifier, code_challenge_method: 'plain' },
        'invalid_request',
      );
    });

    it('redirects invalid_request for a code_challenge without code_challenge_method (that means plain)', async () => {
      const { challenge } = pkcePair();
      await expectRedirectError(client, { response_type: 'code', code_challenge: challenge }, 'invalid_request');
    });

    it('redirects invalid_request for a public client without code_challenge', async () => {
      await expectRedirectError(publicClient, { response_type: 'code' }, 'invalid_request');
    });

    it('redirects invalid_request for a repeated parameter', async () => {
      await expectRedirectError(
        client,
        [
          ['response_type', 'code'],
          ['client_id', client.client_id],
          ['redirect_uri', REDIRECT_URI],
          ['state', 'st&ate=1'],
          ['scope', 'orders:read'],
          ['scope', 'users:read'],
        ],
        'invalid_request',
      );
    });

    it('keeps error_description within the characters RFC 6749 allows when it echoes the request', async () => {
      await expectRedirectError(client, { response_type: 'code', scope: '"q"\\\u00e9\u0000' }, 'invalid_scope');
      await expectRedirectError(
        client,
        [
          ['response_type', 'code'],
          ['client_id', client.client_id],
          ['redirect_uri', REDIRECT_URI],
          ['state', 'st&ate=1'],
          ['p"\u00e9\n', '1'],
          ['p"\u00e9\n', '2'],
        ],
        'invalid_request',
      );
    });

    it('keeps the query of a registered redirect_uri and adds the error parameters to it', async () => {
      const withQuery = await registerClient(t, { redirectUris: ['https://client.example/cb?tenant=7'] });
      const res = await new Browser(t).get(
        authorizePath({ response_type: 'token', client_id: withQuery.client_id, redirect_uri: 'https://client.example/cb?tenant=7' }),
      );
      const q = redirectParams(res, 'https://client.example/cb');
      expect(q.get('tenant')).toBe('7');
      expect(q.get('error')).toBe('unsupported_response_type');
      expect(q.get('iss')).toBe(t.config.issuer);
    });
  });

  describe('3. without a login session', () => {
    it('redirects 302 to /login with the request as a relative return_to path', async () => {
      const client = await registerClient(t, { trusted: true });
      const path = authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI, state: 'a b' });
      const res = await new Browser(t).get(path);
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location, 'http://relative.invalid');
      expect(location.origin).toBe('http://relative.invalid');
      expect(location.pathname).toBe('/login');
      expect(location.searchParams.get('return_to')).toBe(path);
    });

    it('comes back to the authorization request after the login and issues the code', async () => {
      const client = await registerClient(t, { trusted: true });
      const user = await t.createUser();
      const browser = new Browser(t);
      const path = authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI, state: 'z' });
      const toLogin = await browser.get(path);
      const loginPage = await browser.get(toLogin.headers.location);
      expect(parseForm(loginPage.text).hidden.return_to).toBe(path);
      const loggedIn = await browser.submit(loginPage, { email: user.email, password: TEST_PASSWORD });
      expect([302, 303]).toContain(loggedIn.status);
      expect(loggedIn.headers.location).toBe(path);
      const q = redirectParams(await browser.get(loggedIn.headers.location));
      expect(q.get('code')).toEqual(expect.stringMatching(/\S/));
      expect(q.get('state')).toBe('z');
    });
  });

  describe('4. a trusted client', () => {
    it('gets 302 to redirect_uri with code, state and iss at once, without a consent page', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const res = await browser.get(
        authorizePath({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT_URI,
          state: 'xyz',
          scope: 'orders:read',
        }),
      );
      expect(res.status).toBe(302);
      const q = redirectParams(res);
      expect([...q.keys()].sort()).toEqual(['code', 'iss', 'state']);
      expect(q.get('state')).toBe('xyz');
      expect(q.get('iss')).toBe(t.config.issuer);
      // At least 128 bits of randomness: 22 base64url characters or more.
      expect(q.get('code')).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    });

    it('issues a different code for every request', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const a = await authorizeCode(browser, client);
      const b = await authorizeCode(browser, client);
      expect(a).not.toBe(b);
    });

    it("grants the client's allowed scopes when scope is omitted", async () => {
      const client = await registerClient(t, { trusted: true, scope: 'users:read orders:read' });
      const { browser } = await signedIn(t);
      const code = await authorizeCode(browser, client, { redirect_uri: REDIRECT_URI });
      const res = await token(t, client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
      expect(res.status).toBe(200);
      expect(res.body.scope.split(' ').sort()).toEqual(['orders:read', 'users:read']);
    });

    it('grants the default client scopes but the OpenID Connect ones when scope is omitted and the client was registered without a scope list', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const code = await authorizeCode(browser, client);
      const res = await token(t, client, { grant_type: 'authorization_code', code });
      // A request that does not name openid is not an OpenID Connect request (Core 1.0 3.1.2.1): no ID token.
      const expected = defaultClientScope()
        .split(' ')
        .filter((s) => !['openid', 'profile', 'email'].includes(s));
      expect(expected).not.toContain('clients:admin');
      expect(res.body.scope.split(' ').sort()).toEqual(expected.sort());
      expect(res.body).not.toHaveProperty('id_token');
    });

    it('omits state from the redirect when the request had none', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const res = await browser.get(authorizePath({ response_type: 'code', client_id: client.client_id }));
      expect([...redirectParams(res).keys()].sort()).toEqual(['code', 'iss']);
    });

    it('grants exactly the requested scopes when scope is given', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const code = await authorizeCode(browser, client, { scope: 'orders:write' });
      const res = await token(t, client, { grant_type: 'authorization_code', code });
      expect(res.body.scope).toBe('orders:write');
    });
  });

  describe('5. an untrusted client', () => {
    async function consentPage(client: ClientView, browser: Browser, params: Record<string, string> = {}) {
      const res = await browser.get(
        authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI, state: 'st', ...params }),
      );
      expect(res.status).toBe(200);
      return res;
    }

    it('shows a consent page that names the client, lists the requested scopes and posts a csrf token and a decision', async () => {
      const client = await registerClient(t, { name: 'Photo <Printer> & Co' });
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser, { scope: 'orders:read users:write' });
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toContain('Photo &lt;Printer&gt; &amp; Co');
      expect(page.text).not.toContain('<Printer>');
      expect(page.text).toContain('orders:read');
      expect(page.text).toContain('users:write');
      expect(page.text).not.toContain('orders:write');
      expect(page.text).not.toContain('users:read');
      // Each scope is explained in words, not only named.
      expect(page.text).toContain(scopeDescription('orders:read'));
      expect(page.text).toContain(scopeDescription('users:write'));
      const form = parseForm(page.text);
      expect(form.method?.toLowerCase()).toBe('post');
      expect(form.action).toBe('/authorize/consent');
      expect(form.hidden.csrf).toMatch(/^\S{16,}$/);
      expect(form.buttons).toEqual(
        expect.arrayContaining([
          { name: 'decision', value: 'allow' },
          { name: 'decision', value: 'deny' },
        ]),
      );
    });

    it("lists the client's allowed scopes on the consent page when scope is omitted", async () => {
      const client = await registerClient(t, { scope: 'users:read orders:write' });
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser);
      expect(page.text).toContain('users:read');
      expect(page.text).toContain('orders:write');
      expect(page.text).not.toContain('orders:read');
    });

    it("sends frame-ancestors 'none' and no-referrer with the consent page", async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      expectFramingAndReferrerProtection(await consentPage(client, browser));
    });

    it("sends frame-ancestors 'none' and no-referrer with the login page", async () => {
      expectFramingAndReferrerProtection(await new Browser(t).get('/login'));
    });

    it('redirects with a code, state and iss (302 or 303, never 307) when the user allows', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser, { scope: 'orders:read' });
      const res = await browser.submit(page, { decision: 'allow' });
      expect([302, 303]).toContain(res.status);
      const q = redirectParams(res);
      expect(q.get('state')).toBe('st');
      expect(q.get('iss')).toBe(t.config.issuer);
      const tokens = await token(t, client, { grant_type: 'authorization_code', code: q.get('code')!, redirect_uri: REDIRECT_URI });
      expect(tokens.status).toBe(200);
      expect(tokens.body.scope).toBe('orders:read');
    });

    it('redirects with error=access_denied, state and iss and no code when the user denies', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      const res = await browser.submit(await consentPage(client, browser), { decision: 'deny' });
      expect([302, 303]).toContain(res.status);
      const q = redirectParams(res);
      expect(q.get('error')).toBe('access_denied');
      expect(q.get('error_description')).toMatch(ERROR_DESCRIPTION);
      expect(q.get('state')).toBe('st');
      expect(q.get('iss')).toBe(t.config.issuer);
      expect(q.has('code')).toBe(false);
    });

    it('skips consent for scopes the user already granted to the client', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      await browser.submit(await consentPage(client, browser, { scope: 'orders:read orders:write' }), { decision: 'allow' });
      const again = await browser.get(
        authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI, state: 'b', scope: 'orders:read' }),
      );
      expect(again.status).toBe(302);
      expect(redirectParams(again).get('code')).toEqual(expect.stringMatching(/\S/));
    });

    it('asks again when more scopes are requested than were granted', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      await browser.submit(await consentPage(client, browser, { scope: 'orders:read' }), { decision: 'allow' });
      const page = await consentPage(client, browser, { scope: 'orders:read users:read' });
      expect(parseForm(page.text).action).toBe('/authorize/consent');
    });

    it("does not let one user's consent skip the consent page for another user", async () => {
      const client = await registerClient(t);
      const first = await signedIn(t);
      await first.browser.submit(await consentPage(client, first.browser), { decision: 'allow' });
      const second = await signedIn(t);
      await consentPage(client, second.browser);
    });

    it('does not record consent when the user denies', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      await browser.submit(await consentPage(client, browser), { decision: 'deny' });
      await consentPage(client, browser);
    });

    it('refuses a consent POST without a csrf token with 403 and issues nothing', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser);
      const res = await browser.submit(page, { csrf: undefined, decision: 'allow' });
      expect(res.status).toBe(403);
      expect(res.headers.location).toBeUndefined();
      // Nothing was recorded either: the consent page is shown again.
      await consentPage(client, browser);
    });

    it('refuses a consent POST with a wrong csrf token with 403 and issues nothing', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      const other = await signedIn(t);
      const otherCsrf = parseForm((await consentPage(client, other.browser)).text).hidden.csrf;
      const page = await consentPage(client, browser);
      for (const csrf of ['wrong', otherCsrf, `${parseForm(page.text).hidden.csrf}x`]) {
        const res = await browser.submit(page, { csrf, decision: 'allow' });
        expect(res.status).toBe(403);
        expect(res.headers.location).toBeUndefined();
      }
      await consentPage(client, browser);
    });

    it('refuses a consent POST without a login session with 403', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser);
      const res = await new Browser(t).submit(page, { decision: 'allow' });
      expect(res.status).toBe(403);
      expect(res.headers.location).toBeUndefined();
    });

    it('validates the request carried by the consent form again (a tampered redirect_uri gets a 400 page)', async () => {
      const client = await registerClient(t);
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser);
      const res = await browser.submit(page, { redirect_uri: 'https://evil.example/cb', decision: 'allow' });
      expectErrorPage(res);
    });

    it('does not let the consent form widen the scope beyond what the client is allowed', async () => {
      const client = await registerClient(t, { scope: 'orders:read' });
      const { browser } = await signedIn(t);
      const page = await consentPage(client, browser);
      const res = await browser.submit(page, { scope: 'orders:read users:write', decision: 'allow' });
      const code = redirectParams(res).get('code');
      const issued = await token(t, client, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT_URI });
      expect(issued.status).toBe(200);
      expect(issued.body.scope).toBe('orders:read');
      const other = (await signedIn(t)).browser;
      const wider = await other.submit(await consentPage(client, other), { scope: 'users:write', decision: 'allow' });
      expect(redirectParams(wider).get('error')).toBe('invalid_scope');
    });

    it('binds the code to the PKCE challenge sent to /authorize through the consent page', async () => {
      const client = await registerClient(t, { isPublic: true });
      const { browser } = await signedIn(t);
      const { verifier, challenge } = pkcePair();
      const page = await consentPage(client, browser, { code_challenge: challenge, code_challenge_method: 'S256' });
      const q = redirectParams(await browser.submit(page, { decision: 'allow' }));
      const res = await token(t, client, {
        grant_type: 'authorization_code',
        code: q.get('code')!,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      });
      expect(res.status).toBe(200);
    });
  });

  it('answers a login with the wrong password on the way to /authorize with 401, and issues no code', async () => {
    const client = await registerClient(t, { trusted: true });
    const user = await t.createUser();
    const browser = new Browser(t);
    const path = authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI });
    const res = await login(browser, user.email, 'not the right password', path);
    expect(res.status).toBe(401);
    expect((await browser.get(path)).headers.location).toMatch(/^\/login\?/);
  });
});
