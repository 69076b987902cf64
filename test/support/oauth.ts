import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type JWK, type JWTPayload, SignJWT, generateKeyPair } from 'jose';
import type { Response } from 'supertest';
import * as oauth from 'oauth4webapi';
import { expect } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView, type CreateClientInput } from '../../src/oauth/clients/client-metadata';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { ALL_SCOPES, TEST_PASSWORD, type TestApp } from './test-app';

export const REDIRECT_URI = 'https://client.example/cb';

/** Rate limits high enough that a suite's many logins and token requests are never throttled. */
export const NO_RATE_LIMITS = { RATE_LIMIT_LOGIN: '100000', RATE_LIMIT_TOKEN: '100000' };

/** The Content-Security-Policy of every HTML page of the authorization server (inline styles only, nothing framed). */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'";

/** Registers a client the way `client:create` does; confidential and untrusted unless told otherwise. */
export async function registerClient(t: TestApp, input: Partial<CreateClientInput> = {}): Promise<ClientView> {
  return t.app.get(ClientsService).create({ name: 'Photo Printer', redirectUris: [REDIRECT_URI], ...input });
}

/** An RFC 7636 verifier (43..128 unreserved characters) and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** HTTP Basic credentials as RFC 6749 2.3.1 wants them: each part form-URL-encoded, then base64. */
/**
 * A code request for `orders:read` with PKCE (S256) and a state, plus `extra`, pushed to `/par` with oauth4webapi:
 * the response, the verifier and the state.
 */
export async function pushCodeRequest(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  auth: oauth.ClientAuth,
  extra: Record<string, string> = {},
  options: oauth.PushedAuthorizationRequestOptions = {},
): Promise<{ response: globalThis.Response; verifier: string; state: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const params = new URLSearchParams({
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    scope: 'orders:read',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  });
  const response = await oauth.pushedAuthorizationRequest(as, client, auth, params, options);
  return { response, verifier, state };
}

export function basicAuth(id: string, secret: string): string {
  const encode = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

/** Every character percent-encoded: still a valid form-URL encoding, so the server must decode it. */
export function percentEncodeAll(value: string): string {
  return [...Buffer.from(value)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

function unescapeHtml(value: string): string {
  return value.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]);
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? unescapeHtml(m[1]) : undefined;
}

export interface ParsedForm {
  method: string | undefined;
  action: string | undefined;
  /** Hidden inputs by name. */
  hidden: Record<string, string>;
  /** Names of every input (any type). */
  inputs: Record<string, string | undefined>;
  /** `name=value` of each submit button. */
  buttons: { name: string | undefined; value: string | undefined }[];
}

/** The first `<form>` of an HTML page, read as a browser would submit it. */
export function parseForm(html: string): ParsedForm {
  const [form] = parseForms(html);
  if (!form) throw new Error(`no form in page: ${html.slice(0, 300)}`);
  return form;
}

/** Every `<form>` of an HTML page, in document order, read as a browser would submit it. */
export function parseForms(html: string): ParsedForm[] {
  return [...html.matchAll(/<form\b[^>]*>([\s\S]*?)<\/form>/gi)].map((form) => {
    const open = /<form\b[^>]*>/i.exec(form[0])![0];
    const hidden: Record<string, string> = {};
    const inputs: Record<string, string | undefined> = {};
    for (const [tag] of form[1].matchAll(/<input\b[^>]*>/gi)) {
      const name = attr(tag, 'name');
      if (!name) continue;
      inputs[name] = attr(tag, 'type');
      if (attr(tag, 'type') === 'hidden') hidden[name] = attr(tag, 'value') ?? '';
    }
    const buttons = [...form[1].matchAll(/<button\b[^>]*>/gi)].map(([tag]) => ({ name: attr(tag, 'name'), value: attr(tag, 'value') }));
    return { method: attr(open, 'method'), action: attr(open, 'action'), hidden, inputs, buttons };
  });
}

/**
 * A browser over supertest: keeps the cookies the server sets (regardless of `Secure`, as a tester would),
 * sends them back, and never follows redirects on its own.
 */
export class Browser {
  readonly cookies = new Map<string, string>();

  constructor(private readonly t: TestApp) {}

  async get(path: string): Promise<Response> {
    return this.remember(await this.t.http().get(path).set(this.headers()).redirects(0));
  }

  /** POSTs a form; `headers` are sent besides the cookies (e.g. what a proxy adds). */
  async post(path: string, form: Record<string, string | undefined>, headers: Record<string, string> = {}): Promise<Response> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) if (v !== undefined) body.append(k, v);
    const req = this.t
      .http()
      .post(path)
      .set({ ...this.headers(), ...headers });
    return this.remember(await req.type('form').send(body.toString()).redirects(0));
  }

  /** POSTs JSON, as a page's script does with fetch (same origin, cookies sent). */
  async postJson(path: string, body: unknown): Promise<Response> {
    return this.remember(
      await this.t
        .http()
        .post(path)
        .set(this.headers())
        .send(body as object)
        .redirects(0),
    );
  }

  /** Submits the first form of `page` with its hidden fields plus `extra` (a browser's form submission). */
  async submit(page: Response, extra: Record<string, string | undefined> = {}, headers: Record<string, string> = {}): Promise<Response> {
    const form = parseForm(page.text);
    return this.post(form.action ?? '/', { ...form.hidden, ...extra }, headers);
  }

  private headers(): Record<string, string> {
    if (this.cookies.size === 0) return {};
    return { Cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  }

  private remember(res: Response): Response {
    for (const line of setCookies(res)) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

export function setCookies(res: Response): string[] {
  return ([] as string[]).concat(res.headers['set-cookie'] ?? []);
}

/** Signs in through the login form; returns the answer of `POST /login`. */
export async function login(browser: Browser, email: string, password = TEST_PASSWORD, returnTo?: string): Promise<Response> {
  const page = await browser.get(returnTo === undefined ? '/login' : `/login?return_to=${encodeURIComponent(returnTo)}`);
  expect(page.status).toBe(200);
  return browser.submit(page, { email, password });
}

/** A browser with a fresh user signed in. */
export async function signedIn(t: TestApp, overrides: Parameters<TestApp['createUser']>[0] = {}) {
  const user = await t.createUser(overrides);
  const browser = new Browser(t);
  const res = await login(browser, user.email);
  expect(res.status).toBe(303);
  return { user, browser };
}

export interface AuthorizeParams {
  response_type?: string;
  client_id?: string;
  redirect_uri?: string;
  scope?: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  [name: string]: string | undefined;
}

export function authorizePath(params: AuthorizeParams | [string, string][]): string {
  const q = new URLSearchParams();
  const entries = Array.isArray(params) ? params : Object.entries(params);
  for (const [k, v] of entries) if (v !== undefined) q.append(k, v);
  return `/authorize?${q.toString()}`;
}

/** The parameters of a redirect to the client, after checking that it goes to `redirectUri`. */
export function redirectParams(res: Response, redirectUri = REDIRECT_URI): URLSearchParams {
  expect([302, 303], `status ${res.status}: ${res.text?.slice(0, 300)}`).toContain(res.status);
  const location = new URL(res.headers.location);
  expect(`${location.origin}${location.pathname}`).toBe(redirectUri.split('?')[0]);
  return location.searchParams;
}

/**
 * Runs the front channel as a signed-in browser: GET /authorize, allowing on the consent page if one is shown.
 * Returns the code; the caller chooses PKCE, scope and redirect_uri.
 */
export async function authorizeCode(
  browser: Browser,
  client: ClientView,
  params: Omit<AuthorizeParams, 'client_id'> = {},
): Promise<string> {
  let res = await browser.get(authorizePath({ response_type: 'code', client_id: client.client_id, state: 's', ...params }));
  if (res.status === 200) res = await browser.submit(res, { decision: 'allow' });
  const q = redirectParams(res, params.redirect_uri ?? client.redirect_uris[0]);
  const code = q.get('code');
  if (!code) throw new Error(`no code: ${res.headers.location}`);
  return code;
}

/**
 * An OpenID Connect code flow with PKCE for a signed-in browser and a trusted client registered for it: the token
 * response (with its ID token), for a test that reads how the person signed in.
 */
export async function openIdTokens(t: TestApp, browser: Browser): Promise<Response> {
  const client = await registerClient(t, { trusted: true });
  const pkce = pkcePair();
  const redirectUri = client.redirect_uris[0];
  const code = await authorizeCode(browser, client, {
    scope: 'openid',
    redirect_uri: redirectUri,
    code_challenge: pkce.challenge,
    code_challenge_method: 'S256',
  });
  const issued = await token(t, client, {
    grant_type: 'authorization_code',
    code,
    code_verifier: pkce.verifier,
    redirect_uri: redirectUri,
  });
  expect(issued.status, JSON.stringify(issued.body)).toBe(200);
  return issued;
}

export type ClientAuthMethod = 'basic' | 'post' | 'none';

/** POST /token (or /revoke, /introspect) as a form, authenticated as `client`. */
export async function backChannel(
  t: TestApp,
  path: '/token' | '/revoke' | '/introspect',
  client: ClientView,
  form: Record<string, string | undefined>,
  method: ClientAuthMethod = client.client_secret ? 'basic' : 'none',
): Promise<Response> {
  const body = new URLSearchParams();
  if (method === 'post') {
    body.append('client_id', client.client_id);
    body.append('client_secret', client.client_secret ?? '');
  }
  if (method === 'none') body.append('client_id', client.client_id);
  for (const [k, v] of Object.entries(form)) if (v !== undefined) body.append(k, v);
  const req = t.http().post(path).type('form');
  if (method === 'basic') req.set('Authorization', basicAuth(client.client_id, client.client_secret ?? ''));
  return req.send(body.toString());
}

export const token = (t: TestApp, client: ClientView, form: Record<string, string | undefined>, method?: ClientAuthMethod) =>
  backChannel(t, '/token', client, form, method);

/** Asserts an RFC 6749 5.2 error answer. */
export function expectOAuthError(res: Response, status: number, error: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description']);
  expect(res.body.error).toBe(error);
  expect(res.body.error_description).toMatch(ERROR_DESCRIPTION);
}

/** RFC 6749 4.1.2.1 / 5.2: error_description holds only %x20-21 / %x23-5B / %x5D-7E (and something to read). */
export const ERROR_DESCRIPTION = /^[\x20\x21\x23-\x5B\x5D-\x7E]*\S[\x20\x21\x23-\x5B\x5D-\x7E]*$/;

/**
 * A complete grant the way a real client gets one: signs in (the given `browser`, else `user`, else a fresh user),
 * authorizes a trusted client with PKCE and redeems the code at `POST /token`. Unlike {@link TestApp.token}, the grant
 * is stored, so revoking it or deleting the user applies to these tokens.
 */
export async function issueTokens(
  t: TestApp,
  opts: { client?: ClientView; scope?: string; browser?: Browser; user?: { id: string; email: string } } = {},
): Promise<{ client: ClientView; access: string; refresh: string; scope: string; userId: string; browser: Browser }> {
  const client = opts.client ?? (await registerClient(t, { trusted: true }));
  let { browser, user } = opts;
  if (!browser) {
    user ??= await t.createUser();
    browser = new Browser(t);
    const signIn = await login(browser, user.email);
    expect(signIn.status).toBe(303);
  }
  const pkce = pkcePair();
  const code = await authorizeCode(browser, client, {
    scope: opts.scope,
    code_challenge: pkce.challenge,
    code_challenge_method: 'S256',
  });
  const res = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // The user named or signed in here; else the browser's user, as the token names it.
  const userId = user?.id ?? (decodeJwt(res.body.access_token).payload.sub as string);
  return { client, access: res.body.access_token, refresh: res.body.refresh_token, scope: res.body.scope, userId, browser };
}

/** GET /api/resource with a bearer token: 200 while the token works, 401 once it does not. */
export async function resourceStatus(t: TestApp, accessToken: string): Promise<number> {
  return (await t.http().get('/api/resource').set('Authorization', `Bearer ${accessToken}`)).status;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Base64url of a string, a buffer or an object's JSON: the parts of a hand-built JWS. */
export function b64url(value: string | Buffer | object): string {
  const raw = typeof value === 'string' || Buffer.isBuffer(value) ? value : JSON.stringify(value);
  return Buffer.from(raw).toString('base64url');
}

/** Splits a compact JWS into its decoded header and payload (and the raw parts). */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown>; parts: string[] } {
  const parts = token.split('.');
  return {
    header: JSON.parse(Buffer.from(parts[0], 'base64url').toString()),
    payload: JSON.parse(Buffer.from(parts[1], 'base64url').toString()),
    parts,
  };
}

/** The JWK set the service publishes, read over HTTP as any resource server or client would. */
export async function publishedJwks(t: TestApp): Promise<JWK[]> {
  const res = await t.http().get('/.well-known/jwks.json');
  if (res.status !== 200) throw new Error(`jwks.json answered ${res.status}`);
  return res.body.keys as JWK[];
}

/** The claims a genuine access token carries (RFC 9068), for `sub` with every scope, valid for 5 minutes. */
export function genuineClaims(t: TestApp, sub: string, overrides: Record<string, unknown> = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: t.config.issuer,
    sub,
    aud: t.config.audience,
    client_id: 'test-client',
    scope: ALL_SCOPES.join(' '),
    gid: randomUUID(),
    iat: now,
    exp: now + 300,
    jti: randomUUID(),
    ...overrides,
  };
}

/**
 * Signs `claims` with the service's own active private key, with a header the service would write unless `header`
 * changes it (`undefined` drops a field). For tokens the service would never mint (expired, another `aud`, `typ` or
 * algorithm): the signature is genuine, so a rejection can only come from the check the test names.
 */
export async function signWithServiceKey(
  t: TestApp,
  claims: JWTPayload,
  header: { alg?: string; typ?: string | undefined; kid?: string | undefined } = {},
): Promise<string> {
  const key = t.app.get(SigningKeysService).activeKey();
  const protectedHeader: Record<string, unknown> = { alg: 'RS256', typ: 'at+jwt', kid: key.kid, ...header };
  for (const name of Object.keys(protectedHeader)) if (protectedHeader[name] === undefined) delete protectedHeader[name];
  return new SignJWT(claims).setProtectedHeader(protectedHeader as { alg: string }).sign(key.privateKey);
}

/** Signs genuine-looking claims with a freshly generated RSA key the service has never seen. */
export async function signWithForeignKey(claims: JWTPayload, kid: string): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048 });
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid }).sign(privateKey);
}

/**
 * A Bearer challenge of the resource API as RFC 6750 3 and RFC 9728 5.1 want it: `params`, then the URL of the
 * protected-resource metadata (under the issuer, which is also the audience unless a suite sets AUDIENCE).
 */
export function bearerChallenge(t: TestApp, params: string): string {
  return `Bearer ${params}, resource_metadata="${t.config.issuer}/.well-known/oauth-protected-resource"`;
}

/** A page of the authorization server: `status`, HTML, the pages' CSP, never cached. */
export function expectPage(res: Response, status: number): void {
  expect(res.status, res.text.slice(0, 600)).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
  expect(res.headers['cache-control']).toBe('no-store');
}

/** The hidden fields of the form of `page` that posts to `action`. */
export function formOf(page: Response, action: string): Record<string, string> {
  const form = parseForms(page.text).find((f) => f.action === action);
  if (!form) throw new Error(`no form posting to ${action} in:\n${page.text.slice(0, 800)}`);
  return form.hidden;
}

/** The audit events of `type` about `userId`, newest first (at most 100). */
export async function auditEventsOf(t: TestApp, type: string, userId: string) {
  return (await t.app.get(AuditService).list(Object.assign(new AuditEventsQueryDto(), { type, user_id: userId, limit: 100, offset: 0 })))
    .data;
}
