import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { Browser, NO_RATE_LIMITS, REDIRECT_URI, registerClient, signedIn } from '../support/oauth';
import { TEST_PASSWORD, type TestApp, createListeningTestApp } from '../support/test-app';

/**
 * oauth4webapi as an independent, standards-strict client (RFC 6749, 7636, 7009, 7662, 8414, 9068, 9207) against
 * the real app listening on 127.0.0.1, whose ISSUER is exactly the URL the library talks to.
 */
describe('a standards-strict OAuth client (oauth4webapi)', () => {
  let t: TestApp;
  let issuer: URL;
  let as: oauth.AuthorizationServer;
  const http = { [oauth.allowInsecureRequests]: true } as const;

  beforeAll(async () => {
    const listening = await createListeningTestApp(NO_RATE_LIMITS);
    t = listening;
    issuer = new URL(listening.origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
  });
  afterAll(() => t.close());

  function clientOf(view: ClientView): oauth.Client {
    return { client_id: view.client_id };
  }

  function authOf(view: ClientView, method: 'basic' | 'post' = 'basic'): oauth.ClientAuth {
    if (!view.client_secret) return oauth.None();
    return method === 'basic' ? oauth.ClientSecretBasic(view.client_secret) : oauth.ClientSecretPost(view.client_secret);
  }

  /** The front channel as a signed-in browser: authorization URL → (consent) → the redirect back to the client. */
  async function authorize(browser: Browser, view: ClientView, decision: 'allow' | 'deny' = 'allow') {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', view.client_id);
    url.searchParams.set('redirect_uri', REDIRECT_URI);
    url.searchParams.set('scope', 'orders:read users:read');
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    expect(url.origin).toBe(issuer.origin);

    let res = await browser.get(url.pathname + url.search);
    if (res.status === 200) res = await browser.submit(res, { decision });
    expect([302, 303]).toContain(res.status);
    return { callback: new URL(res.headers.location), verifier, state };
  }

  async function codeFlow(view: ClientView, method: 'basic' | 'post' = 'basic') {
    const { browser } = await signedIn(t);
    const { callback, verifier, state } = await authorize(browser, view);
    const params = oauth.validateAuthResponse(as, clientOf(view), callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      clientOf(view),
      authOf(view, method),
      params,
      REDIRECT_URI,
      verifier,
      http,
    );
    return oauth.processAuthorizationCodeResponse(as, clientOf(view), response);
  }

  it('discovers the RFC 8414 metadata, whose issuer is the URL it was fetched from', () => {
    expect(as.issuer).toBe(issuer.href.replace(/\/$/, ''));
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.token_endpoint).toBe(`${issuer.origin}/token`);
  });

  it('completes the code flow with PKCE and client_secret_basic, and the access token validates as an RFC 9068 JWT', async () => {
    const view = await registerClient(t);
    const user = await t.createUser();
    const browser = new Browser(t);
    const signIn = await browser.get('/login');
    await browser.submit(signIn, { email: user.email, password: TEST_PASSWORD });

    const { callback, verifier, state } = await authorize(browser, view);
    expect(callback.origin + callback.pathname).toBe(REDIRECT_URI);
    const params = oauth.validateAuthResponse(as, clientOf(view), callback, state);
    const response = await oauth.authorizationCodeGrantRequest(as, clientOf(view), authOf(view), params, REDIRECT_URI, verifier, http);
    const tokens = await oauth.processAuthorizationCodeResponse(as, clientOf(view), response);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.scope).toBe('orders:read users:read');
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.expires_in).toBe(t.config.accessTokenTtl);

    const resourceRequest = new Request(`${issuer.origin}/api/resource`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const claims = await oauth.validateJwtAccessToken(as, resourceRequest, t.config.audience, { ...http, signingAlgorithms: ['RS256'] });
    expect(claims).toMatchObject({ iss: as.issuer, sub: user.id, client_id: view.client_id, scope: 'orders:read users:read' });

    const resource = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL('/api/resource', issuer),
      undefined,
      undefined,
      http,
    );
    expect(resource.status).toBe(200);
    const body = (await resource.json()) as { data: { sub: string } };
    expect(body.data.sub).toBe(user.id);
  });

  it('completes the code flow with client_secret_post', async () => {
    const view = await registerClient(t, { trusted: true });
    const tokens = await codeFlow(view, 'post');
    expect(tokens.access_token).toEqual(expect.any(String));
  });

  it('completes the code flow as a public client (none + PKCE) and refreshes without a secret', async () => {
    const view = await registerClient(t, { trusted: true, isPublic: true });
    const tokens = await codeFlow(view);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      clientOf(view),
      await oauth.refreshTokenGrantRequest(as, clientOf(view), oauth.None(), tokens.refresh_token!, http),
    );
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it('refuses an authorization response whose iss is another issuer or missing (RFC 9207)', async () => {
    const view = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const { callback, state } = await authorize(browser, view);
    expect(callback.searchParams.get('iss')).toBe(as.issuer);

    const forged = new URL(callback);
    forged.searchParams.set('iss', 'https://attacker.example');
    expect(() => oauth.validateAuthResponse(as, clientOf(view), forged, state)).toThrow(oauth.OperationProcessingError);
    const stripped = new URL(callback);
    stripped.searchParams.delete('iss');
    expect(() => oauth.validateAuthResponse(as, clientOf(view), stripped, state)).toThrow(oauth.OperationProcessingError);
    expect(() => oauth.validateAuthResponse(as, clientOf(view), callback, 'another state')).toThrow(oauth.OperationProcessingError);
  });

  it('reads a denied consent as an access_denied authorization response error', async () => {
    const view = await registerClient(t);
    const { browser } = await signedIn(t);
    const { callback, state } = await authorize(browser, view, 'deny');
    try {
      oauth.validateAuthResponse(as, clientOf(view), callback, state);
      expect.unreachable('the response is an error');
    } catch (error) {
      expect(error).toBeInstanceOf(oauth.AuthorizationResponseError);
      expect((error as oauth.AuthorizationResponseError).error).toBe('access_denied');
    }
  });

  it('gets invalid_grant for a replayed code', async () => {
    const view = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const { callback, verifier, state } = await authorize(browser, view);
    const params = oauth.validateAuthResponse(as, clientOf(view), callback, state);
    const redeem = () => oauth.authorizationCodeGrantRequest(as, clientOf(view), authOf(view), params, REDIRECT_URI, verifier, http);
    await oauth.processAuthorizationCodeResponse(as, clientOf(view), await redeem());
    const replay = oauth.processAuthorizationCodeResponse(as, clientOf(view), await redeem());
    await expect(replay).rejects.toBeInstanceOf(oauth.ResponseBodyError);
    await expect(replay).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
  });

  it('gets a 401 Basic challenge for a wrong client secret', async () => {
    const view = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const { callback, verifier, state } = await authorize(browser, view);
    const params = oauth.validateAuthResponse(as, clientOf(view), callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      clientOf(view),
      oauth.ClientSecretBasic('not the secret'),
      params,
      REDIRECT_URI,
      verifier,
      http,
    );
    const result = oauth.processAuthorizationCodeResponse(as, clientOf(view), response);
    await expect(result).rejects.toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    await expect(result).rejects.toMatchObject({ status: 401, cause: [expect.objectContaining({ scheme: 'basic' })] });
  });

  it('rotates refresh tokens, and reuse of a rotated one is invalid_grant that revokes the new one too', async () => {
    const view = await registerClient(t, { trusted: true });
    const first = await codeFlow(view);
    const refresh = async (refreshToken: string) =>
      oauth.processRefreshTokenResponse(
        as,
        clientOf(view),
        await oauth.refreshTokenGrantRequest(as, clientOf(view), authOf(view), refreshToken, http),
      );
    const second = await refresh(first.refresh_token!);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.scope).toBe('orders:read users:read');

    await expect(refresh(first.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(refresh(second.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('narrows the scope on refresh and is refused a wider one with invalid_scope', async () => {
    const view = await registerClient(t, { trusted: true });
    const first = await codeFlow(view);
    const narrowed = await oauth.processRefreshTokenResponse(
      as,
      clientOf(view),
      await oauth.refreshTokenGrantRequest(as, clientOf(view), authOf(view), first.refresh_token!, {
        ...http,
        additionalParameters: { scope: 'orders:read' },
      }),
    );
    expect(narrowed.scope).toBe('orders:read');
    const wider = oauth.processRefreshTokenResponse(
      as,
      clientOf(view),
      await oauth.refreshTokenGrantRequest(as, clientOf(view), authOf(view), narrowed.refresh_token!, {
        ...http,
        additionalParameters: { scope: 'orders:read orders:write' },
      }),
    );
    await expect(wider).rejects.toMatchObject({ error: 'invalid_scope', status: 400 });
  });

  it('introspects its own access and refresh tokens (RFC 7662)', async () => {
    const view = await registerClient(t, { trusted: true });
    const tokens = await codeFlow(view);
    const introspect = async (token: string) =>
      oauth.processIntrospectionResponse(
        as,
        clientOf(view),
        await oauth.introspectionRequest(as, clientOf(view), authOf(view), token, http),
      );
    const access = await introspect(tokens.access_token);
    expect(access).toMatchObject({
      active: true,
      token_type: 'Bearer',
      client_id: view.client_id,
      scope: 'orders:read users:read',
      iss: as.issuer,
    });
    const refresh = await introspect(tokens.refresh_token!);
    expect(refresh).toMatchObject({ active: true, token_type: 'refresh_token', client_id: view.client_id });
    expect(await introspect('garbage')).toEqual({ active: false });
  });

  it("revokes a refresh token (RFC 7009): the grant's tokens become inactive and stop working", async () => {
    const view = await registerClient(t, { trusted: true });
    const tokens = await codeFlow(view);
    await expect(
      oauth.processRevocationResponse(await oauth.revocationRequest(as, clientOf(view), authOf(view), tokens.refresh_token!, http)),
    ).resolves.toBeUndefined();

    const introspect = async (token: string) =>
      oauth.processIntrospectionResponse(
        as,
        clientOf(view),
        await oauth.introspectionRequest(as, clientOf(view), authOf(view), token, http),
      );
    expect(await introspect(tokens.access_token)).toEqual({ active: false });
    expect(await introspect(tokens.refresh_token!)).toEqual({ active: false });
    const resource = oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL('/api/resource', issuer),
      undefined,
      undefined,
      http,
    );
    await expect(resource).rejects.toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    await expect(resource).rejects.toMatchObject({
      status: 401,
      cause: [expect.objectContaining({ scheme: 'bearer', parameters: expect.objectContaining({ error: 'invalid_token' }) })],
    });
    // Revoking an unknown token succeeds too.
    await expect(
      oauth.processRevocationResponse(await oauth.revocationRequest(as, clientOf(view), authOf(view), 'unknown-token', http)),
    ).resolves.toBeUndefined();
  });
});
