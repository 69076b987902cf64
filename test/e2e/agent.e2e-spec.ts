import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, NO_RATE_LIMITS, login } from '../support/oauth';
import { type TestApp, createListeningTestApp } from '../support/test-app';

/**
 * An AI agent (an MCP client, say) that knows nothing but the API's URL, played by oauth4webapi against the real
 * app on 127.0.0.1: a 401 names the protected-resource metadata (RFC 9728), which names the authorization
 * server (RFC 8414), where the agent registers itself (RFC 7591), then runs the code flow with PKCE and a
 * resource indicator (RFC 8707) while a person signs in and consents, and calls the API.
 */
describe('an agent with no setup (oauth4webapi): 401 -> resource metadata -> AS metadata -> register -> code flow -> API', () => {
  let t: TestApp;
  let origin: string;
  const http = { [oauth.allowInsecureRequests]: true } as const;
  const redirectUri = 'http://127.0.0.1:33418/callback';

  beforeAll(async () => {
    const listening = await createListeningTestApp({ ...NO_RATE_LIMITS, REGISTRATION: 'open' });
    t = listening;
    origin = listening.origin;
  });
  afterAll(() => t.close());

  it('gets from an unauthenticated call to a working access token for the API, by discovery alone', async () => {
    const api = new URL('/api/resource', origin);

    // 1. The API refuses, and its challenge says where to learn more.
    const first = await fetch(api);
    expect(first.status).toBe(401);
    const challenge = first.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer /);
    expect(/resource_metadata="([^"]+)"/.exec(challenge)?.[1]).toBe(`${origin}/.well-known/oauth-protected-resource`);
    // A token the API does not take: the library reads the same pointer from its challenge.
    const refused = await oauth.protectedResourceRequest('not-a-token', 'GET', api, new Headers(), null, http).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    const parsed = (refused as oauth.WWWAuthenticateChallengeError).cause[0];
    expect(parsed.parameters).toMatchObject({
      error: 'invalid_token',
      resource_metadata: `${origin}/.well-known/oauth-protected-resource`,
    });

    // 2. Protected-resource metadata (validated by the library against the resource identifier).
    const resource = new URL(origin);
    const rs = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, http));
    expect(rs.authorization_servers).toEqual([origin]);
    expect(rs.scopes_supported).toContain('orders:read');

    // 3. Authorization-server metadata.
    const issuer = new URL(rs.authorization_servers![0]);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
    expect(as.registration_endpoint).toBe(`${origin}/register`);

    // 4. Registration as a public client with a loopback redirect URI.
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          client_name: 'Research agent',
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
        },
        http,
      ),
    );
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' };

    // 5. The code flow with PKCE and the resource indicator; a person signs in and consents in a browser.
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorization = new URL(as.authorization_endpoint!);
    for (const [name, value] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'orders:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource: rs.resource,
    })) {
      authorization.searchParams.set(name, value);
    }
    const user = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, user.email)).status).toBe(303);
    const consent = await browser.get(authorization.pathname + authorization.search);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain('Research agent');
    const back = await browser.submit(consent, { decision: 'allow' });
    const callback = new URL(back.headers.location);
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);

    const params = oauth.validateAuthResponse(as, client, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, {
        ...http,
        additionalParameters: { resource: rs.resource },
      }),
    );
    expect(tokens.scope).toBe('orders:read');
    expect(tokens.refresh_token).toEqual(expect.any(String));

    // 6. The API answers, for the person who consented.
    const answer = await oauth.protectedResourceRequest(tokens.access_token, 'GET', api, new Headers(), null, http);
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { data: { sub: string; client_id: string } };
    expect(body.data).toMatchObject({ sub: user.id, client_id: client.client_id });

    // 7. And the refresh works through the library too.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, http),
    );
    expect((await oauth.protectedResourceRequest(refreshed.access_token, 'GET', api, new Headers(), null, http)).status).toBe(200);
  });
});
