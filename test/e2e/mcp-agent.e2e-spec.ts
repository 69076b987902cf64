import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryAgent } from '../support/mcp-agent';
import { Browser, NO_RATE_LIMITS, decodeJwt, login, parseForm } from '../support/oauth';
import { type TestApp, createListeningTestApp } from '../support/test-app';

const REDIRECT = 'http://127.0.0.1:33418/callback';

/**
 * An AI agent with no setup, played by the official MCP TypeScript SDK's client (`auth()` with an in-memory
 * `OAuthClientProvider`) against the running service, knowing only the URL of `/api/resource`: discovery from the
 * 401, registration, the code flow with PKCE and a resource indicator while a person signs in and consents, and
 * a 403 scope challenge answered by a step-up authorization.
 */
describe('an MCP agent (the official TypeScript SDK) against the service', () => {
  let t: TestApp;
  let origin: string;
  let api: URL;

  beforeAll(async () => {
    const listening = await createListeningTestApp({ ...NO_RATE_LIMITS, REGISTRATION: 'open' });
    t = listening;
    origin = listening.origin;
    api = new URL('/api/resource', origin);
  });
  afterAll(() => t.close());

  /** The person's side: opens the URL the SDK asked to open, answers the consent page, returns the code. */
  async function consentInBrowser(browser: Browser, url: URL, expectAsked: string[], expectAllowedBefore: string[] = []) {
    expect(url.origin).toBe(origin);
    const page = await browser.get(url.pathname + url.search);
    expect(page.status, page.text).toBe(200);
    const asked = /<ul class="scopes">([\s\S]*?)<\/ul>/.exec(page.text)?.[1] ?? '';
    const before = /<ul class="scopes granted">([\s\S]*?)<\/ul>/.exec(page.text)?.[1] ?? '';
    expect([...asked.matchAll(/<code>([^<]+)<\/code>/g)].map((m) => m[1])).toEqual(expectAsked);
    expect([...before.matchAll(/<code>([^<]+)<\/code>/g)].map((m) => m[1])).toEqual(expectAllowedBefore);
    expect(parseForm(page.text).hidden.client_id).toBe(url.searchParams.get('client_id'));
    const back = await browser.submit(page, { decision: 'allow' });
    expect(back.status).toBe(303);
    const callback = new URL(back.headers.location);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
    expect(callback.searchParams.get('iss')).toBe(origin);
    return callback.searchParams.get('code')!;
  }

  it('registers itself, gets a token by the code flow, then steps up on a 403 scope challenge', async () => {
    const agent = new InMemoryAgent(REDIRECT, {
      client_name: 'Research agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const user = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, user.email)).status).toBe(303);

    // The API's 401 names the protected-resource metadata; the SDK takes it from there.
    const first = await fetch(api);
    expect(first.status).toBe(401);
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(first);
    expect(resourceMetadataUrl?.href).toBe(`${origin}/.well-known/oauth-protected-resource`);

    expect(await auth(agent, { serverUrl: api, resourceMetadataUrl, scope: 'orders:read' })).toBe('REDIRECT');
    const clientId = agent.client!.client_id;
    expect(clientId).toMatch(/^[\w-]+$/); // registered dynamically (RFC 7591)
    expect(agent.client).toMatchObject({ scope: 'orders:read' }); // its registration names one scope
    const url = agent.authorizationUrl!;
    expect(url.pathname).toBe('/authorize');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge_method: 'S256',
      scope: 'orders:read',
      resource: origin,
    });
    const code = await consentInBrowser(browser, url, ['orders:read']);
    expect(await auth(agent, { serverUrl: api, resourceMetadataUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const tokens = agent.saved!;
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'orders:read' });
    expect(decodeJwt(tokens.access_token).payload).toMatchObject({ sub: user.id, client_id: clientId, aud: origin });

    const answer = await fetch(api, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(answer.status).toBe(200);

    // A route that needs a scope the token lacks: a 403 challenge naming it and the metadata.
    const users = new URL(`/users/${user.id}`, origin); // the person's own record: users:read
    const refused = await fetch(users, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(refused.status).toBe(403);
    const challenge = extractWWWAuthenticateParams(refused);
    expect(challenge).toEqual({ error: 'insufficient_scope', scope: 'users:read', resourceMetadataUrl });

    // The agent asks again with the union of its scopes. (The SDK refreshes first when it holds a refresh token, and a
    // refresh never widens a grant, so the agent lets its tokens go, as after an upscoping failure.)
    agent.invalidateCredentials('tokens');
    const union = `orders:read ${challenge.scope}`;
    expect(await auth(agent, { serverUrl: users, resourceMetadataUrl, scope: union })).toBe('REDIRECT');
    expect(agent.client!.client_id).toBe(clientId); // no second registration
    const stepUp = await consentInBrowser(browser, agent.authorizationUrl!, ['users:read'], ['orders:read']);
    expect(await auth(agent, { serverUrl: users, resourceMetadataUrl, authorizationCode: stepUp })).toBe('AUTHORIZED');
    expect(agent.saved!.scope).toBe(union);
    const allowed = await fetch(users, { headers: { authorization: `Bearer ${agent.saved!.access_token}` } });
    expect(allowed.status).toBe(200);

    // One consent, grown: the connected-apps page shows the agent once, with both scopes.
    const apps = await browser.get('/account/apps');
    expect(apps.status).toBe(200);
    expect(apps.text.match(/Research agent/g)).toHaveLength(1);
  });
});
