import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { orderBody } from './factories';

/** The built service driven from outside, as a browser and the demo client would: for the process-level suites. */

export interface Demo {
  /** The account the browser signs in with (the demo admin's when unset). */
  email?: string;
  password: string;
  clientId: string;
  clientSecret: string;
}

export function demoFrom(output: string): Demo {
  const password = /admin login:\s+admin@example\.com \/ (\S+)/.exec(output)?.[1];
  const [, clientId, clientSecret] = /CLIENT_ID=(\S+) CLIENT_SECRET=(\S+)/.exec(output) ?? [];
  if (!password || !clientId || !clientSecret) throw new Error(`no demo data in output:\n${output}`);
  return { password, clientId, clientSecret };
}

/** A cookie as a browser sends it back, by its name (`__Host-` prefixed when the issuer is https). */
const cookieOf = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith(`${name}=`) || c.startsWith(`__Host-${name}=`));

export function cookiesOf(res: Response): string[] {
  return res.headers.getSetCookie().map((c) => c.split(';')[0]);
}

const HTML_ENTITIES: Record<string, string> = { '&amp;': '&', '&quot;': '"', '&#39;': "'", '&lt;': '<', '&gt;': '>' };

/**
 * Answers the consent page the demo client gets on its first use (it is not trusted) as a person who clicks Allow:
 * posts the form's hidden fields with `decision=allow`. Any other answer is returned as it is.
 */
export async function allowIfAsked(baseUrl: string, authorize: Response, cookie: string): Promise<Response> {
  if (authorize.status !== 200) return authorize;
  const html = await authorize.text();
  const form = /<form method="post" action="\/authorize\/consent">([\s\S]*?)<\/form>/.exec(html);
  if (!form) throw new Error(`no consent form in: ${html.slice(0, 300)}`);
  const fields = new URLSearchParams();
  for (const [, name, value] of form[1].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields.append(
      name,
      value.replace(/&(amp|quot|#39|lt|gt);/g, (e) => HTML_ENTITIES[e]),
    );
  }
  fields.append('decision', 'allow');
  return fetch(`${baseUrl}/authorize/consent`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: fields,
  });
}

/**
 * The whole code flow as a browser (sign-in, consent the first time) and the demo client would drive it, then a
 * refresh and GET /api/resource; returns every secret it saw.
 */
export async function codeFlow(baseUrl: string, demo: Demo) {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const redirectUri = `${baseUrl}/demo/callback`;
  const authorize = `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: demo.clientId,
    redirect_uri: redirectUri,
    scope: 'users:read orders:read orders:write',
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;
  const first = await fetch(baseUrl + authorize, { redirect: 'manual' });
  expect(first.status).toBe(302);
  const loginUrl = first.headers.get('location')!;
  const form = await fetch(new URL(loginUrl, baseUrl), { redirect: 'manual' });
  const html = await form.text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1];
  const returnTo = /name="return_to" value="([^"]+)"/.exec(html)![1].replace(/&amp;/g, '&');
  const login = await fetch(`${baseUrl}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookiesOf(form).join('; ') },
    body: new URLSearchParams({ email: 'admin@example.com', password: demo.password, csrf, return_to: returnTo }),
  });
  expect(login.status).toBe(303);
  const session = cookiesOf(login).find((c) => c.startsWith('oauth_session='))!;
  const second = await fetch(new URL(login.headers.get('location')!, baseUrl), { redirect: 'manual', headers: { cookie: session } });
  const answered = await allowIfAsked(baseUrl, second, session);
  expect([302, 303]).toContain(answered.status);
  const code = new URL(answered.headers.get('location')!).searchParams.get('code')!;
  const basic = `Basic ${Buffer.from(`${demo.clientId}:${demo.clientSecret}`).toString('base64')}`;
  const tokenRes = await fetch(`${baseUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }),
  });
  expect(tokenRes.status).toBe(200);
  const tokens = (await tokenRes.json()) as { access_token: string; refresh_token: string };
  const refreshed = await fetch(`${baseUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
  });
  expect(refreshed.status).toBe(200);
  const next = (await refreshed.json()) as { access_token: string; refresh_token: string };
  const api = await fetch(`${baseUrl}/api/resource`, { headers: { authorization: `Bearer ${next.access_token}` } });
  expect(api.status).toBe(200);
  return {
    accessToken: next.access_token,
    consentShown: second.status === 200,
    secrets: [
      demo.password,
      demo.clientSecret,
      verifier,
      code,
      csrf,
      session.split('=')[1],
      tokens.access_token,
      tokens.refresh_token,
      next.access_token,
      next.refresh_token,
    ],
    userIdFrom: async () => ((await api.clone().json()) as { data: { sub: string } }).data.sub,
    api,
  };
}

/** An answer that is not the flow's: what the load loop records. */
export interface Failure {
  status: number;
  contentType: string;
  body: string;
}

export class Unexpected extends Error {
  constructor(readonly failure: Failure) {
    super(`${failure.status} ${failure.body.slice(0, 200)}`);
  }
}

async function expectStatus(res: Response, status: number): Promise<Response> {
  if (res.status !== status) {
    throw new Unexpected({ status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() });
  }
  return res;
}

/** One browser with a login session and the demo client: code flow, refresh rotation, an order, as one loop step. */
export class Driver {
  private session = '';
  constructor(
    private readonly baseUrl: string,
    private readonly demo: Demo,
  ) {}

  get basicAuthorization(): string {
    return `Basic ${Buffer.from(`${encodeURIComponent(this.demo.clientId)}:${encodeURIComponent(this.demo.clientSecret)}`).toString('base64')}`;
  }

  async login(): Promise<void> {
    const form = await expectStatus(await fetch(`${this.baseUrl}/login?return_to=%2F`, { redirect: 'manual' }), 200);
    const html = await form.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1];
    const res = await fetch(`${this.baseUrl}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: [cookieOf(form, 'login_csrf'), this.session].filter(Boolean).join('; '),
      },
      body: new URLSearchParams({ email: this.demo.email ?? 'admin@example.com', password: this.demo.password, csrf, return_to: '/' }),
    });
    await expectStatus(res, 303);
    this.session = cookieOf(res, 'oauth_session') ?? this.session;
  }

  private async token(form: Record<string, string>): Promise<{ access_token: string; refresh_token: string }> {
    const res = await fetch(`${this.baseUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: this.basicAuthorization },
      body: new URLSearchParams(form),
    });
    return (await (await expectStatus(res, 200)).json()) as { access_token: string; refresh_token: string };
  }

  /** A login (a reauthentication after the first), a code flow, a refresh rotation and an order; the rotated tokens. */
  async step(): Promise<{ access_token: string; refresh_token: string }> {
    // A login in a browser that has a session is a reauthentication (one transaction with its audit event).
    await this.login();
    const verifier = randomBytes(32).toString('base64url');
    const redirectUri = `${this.baseUrl}/demo/callback`;
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: this.demo.clientId,
      redirect_uri: redirectUri,
      scope: 'users:read orders:read orders:write',
      state: 'st',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const asked = await fetch(`${this.baseUrl}/authorize?${query}`, { redirect: 'manual', headers: { cookie: this.session } });
    const authorize = await allowIfAsked(this.baseUrl, asked, this.session);
    if (authorize.status !== 303) await expectStatus(authorize, 302);
    const code = new URL(authorize.headers.get('location')!).searchParams.get('code');
    if (!code) {
      this.session = '';
      throw new Error(`no code: ${authorize.headers.get('location')}`);
    }
    const tokens = await this.token({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
    const rotated = await this.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    const sub = JSON.parse(Buffer.from(rotated.access_token.split('.')[1], 'base64url').toString()).sub as string;
    const order = await fetch(`${this.baseUrl}/users/${sub}/orders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rotated.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify(orderBody({ item: 'restart' })),
    });
    await expectStatus(order, 201);
    return rotated;
  }
}
