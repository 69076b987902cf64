import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN_EXCHANGE_GRANT } from '../../src/oauth/entities/client.entity';
import { startDocumentServer } from '../support/document-server';
import { InMemoryAgent } from '../support/mcp-agent';
import { Browser, NO_RATE_LIMITS, backChannel, decodeJwt, login, parseForm, parseForms, registerClient, token } from '../support/oauth';
import { type TestApp, createListeningTestApp } from '../support/test-app';

const REDIRECT = 'http://127.0.0.1:33418/callback';

/** A second resource server, behind a gateway that acts for the person there (RFC 8693 delegation). */
const REPORTS = 'https://reports.example/mcp';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** The person's side: opens the URL the SDK asked to open, answers the consent page, returns the code. */
async function consentFor(origin: string, browser: Browser, url: URL, expectAsked: string[], expectAllowedBefore: string[] = []) {
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
    const code = await consentFor(origin, browser, url, ['orders:read']);
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
    const stepUp = await consentFor(origin, browser, agent.authorizationUrl!, ['users:read'], ['orders:read']);
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

/**
 * The same agent with no registration at all (MCP 2026-07-28 prefers this): its client_id is the https URL of its
 * own Client ID Metadata Document, served by the test over https. Then a gateway in front of the API acts for the
 * person at a second resource by token exchange (RFC 8693), and the exchanged token dies with the agent's grant.
 */
describe('an MCP agent with a Client ID Metadata Document, and token exchange for a second resource', () => {
  let t: TestApp;
  let origin: string;
  let api: URL;
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;

  beforeAll(async () => {
    documents = await startDocumentServer();
    // No registration endpoint: the document is all the agent has.
    const listening = await createListeningTestApp({
      ...NO_RATE_LIMITS,
      REGISTRATION: 'off',
      CIMD_CA_FILE: documents.caFile,
      CIMD_ALLOWED_HOSTS: 'localhost',
    });
    t = listening;
    origin = listening.origin;
    api = new URL('/api/resource', origin);
  });
  afterAll(async () => {
    await t?.close();
    await documents?.close();
  });

  it('signs in with its document URL as client_id, and a gateway exchanges its token for one aimed at another resource', async () => {
    const document = documents.server.document(
      (url) => ({
        client_id: url,
        client_name: 'Desk agent',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
      { 'Cache-Control': 'max-age=300' },
    );
    const agent = new InMemoryAgent(
      REDIRECT,
      { client_name: 'Desk agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
      document.url,
    );
    const user = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, user.email)).status).toBe(303);

    const { resourceMetadataUrl } = extractWWWAuthenticateParams(await fetch(api));
    expect(await auth(agent, { serverUrl: api, resourceMetadataUrl, scope: 'orders:read' })).toBe('REDIRECT');
    expect(agent.client!.client_id).toBe(document.url);
    const url = agent.authorizationUrl!;
    expect(url.searchParams.get('client_id')).toBe(document.url);

    // The consent page names the document's host, and warns that the app runs on the person's own machine.
    const page = await browser.get(url.pathname + url.search);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`published by <strong>${new URL(document.url).host}</strong>`);
    expect(page.text).toContain('This application runs on your own computer (its address is on localhost)');
    const code = await consentFor(origin, browser, url, ['orders:read']);
    expect(await auth(agent, { serverUrl: api, resourceMetadataUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const agentToken = agent.saved!.access_token;
    expect(decodeJwt(agentToken).payload).toMatchObject({ sub: user.id, client_id: document.url, aud: origin, scope: 'orders:read' });
    expect((await fetch(api, { headers: { authorization: `Bearer ${agentToken}` } })).status).toBe(200);
    expect(documents.server.count(document.path)).toBe(1); // fetched once, then cached

    // A gateway in front of the API (registered for it and for the reports server) acts for the person there.
    const gateway = await registerClient(t, {
      name: 'Tools gateway',
      redirectUris: [],
      grantTypes: [TOKEN_EXCHANGE_GRANT],
      resources: [t.config.audience, REPORTS],
      scope: 'orders:read users:read',
    });
    const exchanged = await token(t, gateway, {
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: agentToken,
      subject_token_type: ACCESS_TOKEN_TYPE,
      resource: REPORTS,
    });
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect(exchanged.body).toMatchObject({ issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', scope: 'orders:read' });
    expect(exchanged.body.refresh_token).toBeUndefined();
    expect(decodeJwt(exchanged.body.access_token).payload).toMatchObject({
      sub: user.id,
      client_id: gateway.client_id,
      aud: REPORTS,
      scope: 'orders:read',
      act: { sub: gateway.client_id, client_id: gateway.client_id },
    });
    // Wider than the agent was allowed: refused.
    const wider = await token(t, gateway, {
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: agentToken,
      subject_token_type: ACCESS_TOKEN_TYPE,
      resource: REPORTS,
      scope: 'orders:read users:read',
    });
    expect(wider.status).toBe(400);
    expect(wider.body.error).toBe('invalid_scope');

    const introspect = () => backChannel(t, '/introspect', gateway, { token: exchanged.body.access_token });
    expect((await introspect()).body).toMatchObject({ active: true, aud: REPORTS });

    // The person revokes the agent on the connected-apps page: the delegated token dies with the agent's grant.
    const apps = await browser.get('/account/apps');
    const revoke = parseForms(apps.text).find((form) => form.hidden.client_id === document.url)!;
    const revoked = await browser.post(revoke.action!, revoke.hidden);
    expect(revoked.status).toBe(303);
    expect((await introspect()).body).toEqual({ active: false });
    expect((await fetch(api, { headers: { authorization: `Bearer ${agentToken}` } })).status).toBe(401);
  });

  it('asks for every scope the metadata lists, as the SDK does when no challenge names one, and is narrowed, not refused', async () => {
    const document = documents.server.document((url) => ({
      client_id: url,
      client_name: 'Wide agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }));
    const agent = new InMemoryAgent(
      REDIRECT,
      { client_name: 'Wide agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
      document.url,
    );
    const user = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, user.email)).status).toBe(303);

    // GET /api/resource takes any token: its 401 names no scope, so the SDK asks for all of scopes_supported.
    const challenge = extractWWWAuthenticateParams(await fetch(api));
    expect(challenge.scope).toBeUndefined();
    expect(await auth(agent, { serverUrl: api, resourceMetadataUrl: challenge.resourceMetadataUrl })).toBe('REDIRECT');
    const url = agent.authorizationUrl!;
    const asked = url.searchParams.get('scope')!.split(' ');
    expect(asked).toEqual(expect.arrayContaining(['audit:read', 'clients:admin', 'orders:read']));

    // The consent page lists what will be granted: the scopes a metadata-document client and this person may have
    // (a team's modules add theirs), never the administrators' ones it asked for too.
    const page = await browser.get(url.pathname + url.search);
    const granted = [...(/<ul class="scopes">([\s\S]*?)<\/ul>/.exec(page.text)?.[1] ?? '').matchAll(/<code>([^<]+)<\/code>/g)].map(
      (m) => m[1],
    );
    expect(granted).toEqual(
      expect.arrayContaining(['users:read', 'users:write', 'openid', 'profile', 'email', 'orders:read', 'orders:write']),
    );
    expect(granted).not.toContain('audit:read');
    expect(granted).not.toContain('clients:admin');
    expect(granted.every((scope) => asked.includes(scope))).toBe(true);
    const code = await consentFor(origin, browser, url, granted);
    expect(await auth(agent, { serverUrl: api, resourceMetadataUrl: challenge.resourceMetadataUrl, authorizationCode: code })).toBe(
      'AUTHORIZED',
    );
    expect(agent.saved!.scope).toBe(granted.join(' '));
    expect((await fetch(api, { headers: { authorization: `Bearer ${agent.saved!.access_token}` } })).status).toBe(200);

    // A route that needs a scope names it in its 401, so that an agent asks for that first.
    const orders = new URL(`/users/${user.id}/orders`, origin);
    expect(extractWWWAuthenticateParams(await fetch(orders)).scope).toBe('orders:read');
  });
});
