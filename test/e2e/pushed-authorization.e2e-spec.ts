import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { Browser, NO_RATE_LIMITS, REDIRECT_URI, login, pushCodeRequest, registerClient, signedIn } from '../support/oauth';
import { type TestApp, type TestDatabase, createListeningTestApp, createTestDatabase } from '../support/test-app';

/**
 * Pushed authorization requests (RFC 9126), driven by oauth4webapi: the client authenticates at /par, the browser
 * goes to /authorize with client_id and request_uri only, and the code comes from the pushed parameters. Two
 * instances share one database: the push reaches one, the browser the other.
 */
describe('pushed authorization requests (RFC 9126, oauth4webapi)', () => {
  let a: TestApp;
  let b: TestApp;
  let as: oauth.AuthorizationServer;
  let asB: oauth.AuthorizationServer;
  let db: TestDatabase;
  const http = { [oauth.allowInsecureRequests]: true } as const;

  beforeAll(async () => {
    db = await createTestDatabase();
    const listeningA = await createListeningTestApp(NO_RATE_LIMITS, '127.0.0.1', db);
    const listeningB = await createListeningTestApp(NO_RATE_LIMITS, '127.0.0.1', db);
    a = listeningA;
    b = listeningB;
    const discover = async (origin: string) => {
      const issuer = new URL(origin);
      return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
    };
    as = await discover(listeningA.origin);
    asB = await discover(listeningB.origin);
    // The two instances have two issuers here (one per port); the front channel only uses paths.
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await db.drop();
  });

  const clientOf = (view: ClientView): oauth.Client => ({ client_id: view.client_id });
  const authOf = (view: ClientView) => oauth.ClientSecretBasic(view.client_secret!);

  const push = (view: ClientView, extra: Record<string, string> = {}, server = as) =>
    pushCodeRequest(server, clientOf(view), authOf(view), extra, http);

  it('publishes the endpoint, answers 201 with a request_uri, and gives the code for it once', async () => {
    expect(as.pushed_authorization_request_endpoint).toBe(`${new URL(as.issuer).origin}/par`);
    expect(as.require_pushed_authorization_requests).toBe(false);
    const view = await registerClient(a, { trusted: true });
    const { response, verifier, state } = await push(view);
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const pushed = await oauth.processPushedAuthorizationResponse(as, clientOf(view), response);
    expect(pushed.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/);
    expect(pushed.expires_in).toBe(300);

    // The browser reaches the other instance, with client_id and request_uri only.
    const { browser } = await signedIn(b);
    const path = `/authorize?client_id=${encodeURIComponent(view.client_id)}&request_uri=${encodeURIComponent(pushed.request_uri)}`;
    const res = await browser.get(path);
    expect(res.status).toBe(302);
    const callback = new URL(res.headers.location);
    const params = oauth.validateAuthResponse(asB, clientOf(view), callback, state);
    const tokenResponse = await oauth.authorizationCodeGrantRequest(as, clientOf(view), authOf(view), params, REDIRECT_URI, verifier, http);
    const tokens = await oauth.processAuthorizationCodeResponse(as, clientOf(view), tokenResponse);
    expect(tokens.scope).toBe('orders:read');

    // Used up: the same request_uri again, on either instance, is an error page (no redirect to anyone).
    for (const t of [a, b]) {
      const again = await new Browser(t).get(path);
      expect(again.status).toBe(400);
      expect(again.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(again.text).toContain('The request_uri is unknown, expired, used already, or another client&#39;s.');
    }
    const replay = await browser.get(path);
    expect(replay.status).toBe(400);
  });

  it('keeps the pushed parameters through the login: only client_id and request_uri travel in the front channel', async () => {
    const view = await registerClient(a);
    const { response, state } = await push(view, { scope: 'orders:read users:read', prompt: 'login' });
    const { request_uri } = await oauth.processPushedAuthorizationResponse(as, clientOf(view), response);
    const path = `/authorize?client_id=${encodeURIComponent(view.client_id)}&request_uri=${encodeURIComponent(request_uri)}`;
    const user = await a.createUser();
    const browser = new Browser(a);
    const toLogin = await browser.get(path);
    expect(toLogin.status).toBe(302);
    expect(toLogin.headers.location).toBe(`/login?return_to=${encodeURIComponent(path)}`);
    const signedInRes = await login(browser, user.email, undefined, path);
    expect(signedInRes.status).toBe(303);
    expect(signedInRes.headers.location).toBe(path);
    // prompt=login was settled by that login: the consent page comes, not the login again.
    const consent = await browser.get(path);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain(`<input type="hidden" name="request_uri" value="${request_uri}">`);
    const allowed = await browser.submit(consent, { decision: 'allow' });
    expect(allowed.status).toBe(303);
    const callback = new URL(allowed.headers.location);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('code')).not.toBeNull();
    // The consent form cannot be posted twice for one pushed request.
    const twice = await browser.submit(consent, { decision: 'allow' });
    expect(twice.status).toBe(400);
  });

  it("refuses another client's request_uri, a pushed request_uri, a bad request at /par, and a client without authentication", async () => {
    const owner = await registerClient(a, { trusted: true });
    const other = await registerClient(a, { trusted: true });
    const { response } = await push(owner);
    const { request_uri } = await oauth.processPushedAuthorizationResponse(as, clientOf(owner), response);
    const { browser } = await signedIn(a);
    const stolen = await browser.get(
      `/authorize?client_id=${encodeURIComponent(other.client_id)}&request_uri=${encodeURIComponent(request_uri)}`,
    );
    expect(stolen.status).toBe(400);

    const nested = await a
      .http()
      .post('/par')
      .auth(owner.client_id, owner.client_secret!)
      .type('form')
      .send({ response_type: 'code', redirect_uri: REDIRECT_URI, request_uri });
    expect(nested.status).toBe(400);
    expect(nested.body).toEqual({ error: 'invalid_request', error_description: 'request_uri cannot be pushed.' });
    const badRedirect = await a
      .http()
      .post('/par')
      .auth(owner.client_id, owner.client_secret!)
      .type('form')
      .send({ response_type: 'code', redirect_uri: 'https://evil.example/cb' });
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.body).toEqual({ error: 'invalid_request', error_description: 'redirect_uri is not registered for this client.' });
    const badScope = await a
      .http()
      .post('/par')
      .auth(owner.client_id, owner.client_secret!)
      .type('form')
      .send({
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        scope: 'nope',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
      });
    expect(badScope.status).toBe(400);
    expect(badScope.body.error).toBe('invalid_scope');
    const anonymous = await a
      .http()
      .post('/par')
      .type('form')
      .send({ client_id: owner.client_id, response_type: 'code', redirect_uri: REDIRECT_URI });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('invalid_client');
    const wrongSecret = await a
      .http()
      .post('/par')
      .auth(owner.client_id, 'wrong')
      .type('form')
      .send({ response_type: 'code', redirect_uri: REDIRECT_URI });
    expect(wrongSecret.status).toBe(401);
  });

  it('requires pushed requests of a client that must push: a plain /authorize request is refused', async () => {
    const strict = await registerClient(a, { trusted: true, requirePushedRequests: true });
    expect(strict.require_pushed_authorization_requests).toBe(true);
    const { browser } = await signedIn(a);
    const plain = await browser.get(
      `/authorize?response_type=code&client_id=${encodeURIComponent(strict.client_id)}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&scope=orders:read&state=s&code_challenge=${'x'.repeat(43)}&code_challenge_method=S256`,
    );
    expect(plain.status).toBe(302);
    const refused = new URL(plain.headers.location);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('error_description')).toBe(
      'This client must push its authorization requests to /par (RFC 9126) and send request_uri.',
    );
    const { response } = await push(strict);
    const { request_uri } = await oauth.processPushedAuthorizationResponse(as, clientOf(strict), response);
    const pushedRes = await browser.get(
      `/authorize?client_id=${encodeURIComponent(strict.client_id)}&request_uri=${encodeURIComponent(request_uri)}`,
    );
    expect(new URL(pushedRes.headers.location).searchParams.get('code')).not.toBeNull();
  });
});
