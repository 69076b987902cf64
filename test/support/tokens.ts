import { randomUUID } from 'node:crypto';
import { type JWK, type JWTPayload, SignJWT, generateKeyPair } from 'jose';
import { ClientsService } from '../../src/oauth/clients.service';
import { CodeGrantService } from '../../src/oauth/code-grant.service';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { ALL_SCOPES, type TestApp } from './test-app';

/** Rate limits out of the way, for suites that sign in or redeem codes as set-up rather than as the subject. */
export const HIGH_RATE_LIMITS = { RATE_LIMIT_LOGIN: '100000', RATE_LIMIT_TOKEN: '100000' };

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
 * Signs a token with the service's own active private key (read from its SigningKeysService, not a second key).
 * Used only where a test needs a correctly signed token whose header or claims differ from what the token
 * service would ever mint (an expiry in the past, another `aud`, `typ` or algorithm): the signature is then
 * genuine, so the rejection can only come from the check the test names.
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

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  clientId: string;
  clientSecret: string;
}

/**
 * Tokens issued the way a real client gets them: a grant and code issued by the service's CodeGrantService, redeemed
 * at `POST /token` with client_secret_basic. Unlike {@link TestApp.token}, the grant exists in the database, so
 * deleting the user or revoking the grant applies to these tokens.
 */
export async function codeFlowTokens(t: TestApp, userId: string, scope = ALL_SCOPES.join(' ')): Promise<IssuedTokens> {
  const clients = t.app.get(ClientsService);
  const view = await clients.create({ name: 'e2e client', redirectUris: ['https://client.example/cb'] });
  const client = await clients.find(view.client_id);
  if (!client || !view.client_secret) throw new Error('client was not created');
  const code = await t.app.get(CodeGrantService).issueCode({ client, userId, scope, redirectUri: null, codeChallenge: null });
  const res = await t
    .http()
    .post('/token')
    .auth(encodeURIComponent(view.client_id), encodeURIComponent(view.client_secret))
    .type('form')
    .send({ grant_type: 'authorization_code', code });
  if (res.status !== 200) throw new Error(`/token answered ${res.status} ${JSON.stringify(res.body)}`);
  return {
    accessToken: res.body.access_token,
    refreshToken: res.body.refresh_token,
    clientId: view.client_id,
    clientSecret: view.client_secret,
  };
}

/**
 * Signs in through the login form (`GET /login`, then `POST /login` with its hidden `csrf` field and cookies) and
 * returns the status: 303/302 when the password is right, 401 when it is not.
 */
export async function loginStatus(t: TestApp, email: string, password: string): Promise<number> {
  const form = await t.http().get('/login');
  const csrf = /name="csrf"[^>]*value="([^"]+)"/.exec(form.text)?.[1] ?? /value="([^"]+)"[^>]*name="csrf"/.exec(form.text)?.[1];
  if (!csrf) throw new Error('the login form has no csrf field');
  const setCookies = ([] as string[]).concat(form.headers['set-cookie'] ?? []);
  const cookie = setCookies.map((c) => c.split(';')[0]).join('; ');
  const res = await t.http().post('/login').set('Cookie', cookie).type('form').send({ email, password, csrf, return_to: '/' });
  return res.status;
}
