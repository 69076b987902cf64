import type { AddressInfo } from 'node:net';
import { type IncomingMessage, type Server, type ServerResponse, createServer, request as httpRequest } from 'node:http';
import * as client from 'openid-client';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../src/oauth/interaction/cookies';
import { Browser, NO_RATE_LIMITS, login, registerClient } from '../support/oauth';
import { listenOnFreePort } from '../support/service-process';
import { authorizationRequest, relyingPartyOf } from '../support/openid';
import { type TestApp, type TestDatabase, createTestApp, createTestDatabase } from '../support/test-app';

const LOGOUT_URI = 'https://client.example/signed-out';

/**
 * A load balancer in front of the instances: each request goes to the next instance in turn (strict round robin,
 * so consecutive steps of a flow land on different instances), and it counts which instance served which path.
 * It listens first (its origin is the issuer); the instances' ports go into `ports` once they listen.
 */
async function roundRobin(ports: number[]): Promise<{ server: Server; served: string[][]; port: number }> {
  let next = 0;
  const served: string[][] = [[], []];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const index = next;
    next = (next + 1) % ports.length;
    served[index].push(`${req.method} ${req.url?.split('?')[0]}`);
    const upstream = httpRequest(
      { host: '127.0.0.1', port: ports[index], method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  return { server, served, port: await listenOnFreePort(server) };
}

/**
 * "An application configured only with the issuer URL, a client id and a secret signs a user in through
 * openid-client across several instances": two instances on one database behind a round-robin balancer, so the
 * login, the authorization request, the consent, the code redemption, UserInfo, the refresh and the logout each
 * land on an instance other than the step before. Nothing of OpenID Connect may live in one instance's memory.
 */
describe('OpenID Connect across two instances behind a round-robin balancer (openid-client)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  let balancer: Awaited<ReturnType<typeof roundRobin>>;
  let issuer: URL;

  beforeAll(async () => {
    // The issuer is the balancer's origin: known before the instances start, as a deployment's public URL is.
    const ports: number[] = [];
    balancer = await roundRobin(ports);
    const origin = `http://127.0.0.1:${balancer.port}`;
    db = await createTestDatabase();
    a = await createTestApp({ ...NO_RATE_LIMITS, ISSUER: origin }, db);
    b = await createTestApp({ ...NO_RATE_LIMITS, ISSUER: origin }, db);
    for (const { app } of [a, b]) {
      await app.listen(0, '127.0.0.1');
      ports.push((app.getHttpServer().address() as AddressInfo).port);
    }
    issuer = new URL(origin);
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => balancer?.server.close(() => resolve()));
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  /** A browser whose every request goes through the balancer. */
  const browser = () => new Browser({ http: () => request(issuer.origin) } as unknown as TestApp);

  it('signs a person in (discovery, code flow with PKCE and nonce, consent, ID token, UserInfo, refresh) and out, each step on another instance', async () => {
    const view = await registerClient(a, { trusted: false, postLogoutRedirectUris: [LOGOUT_URI] });
    const user = await a.createUser({ name: 'Ada Lovelace' });
    const config = await relyingPartyOf(issuer, view);
    expect(config.serverMetadata().issuer).toBe(issuer.origin);

    const person = browser();
    expect((await login(person, user.email)).status).toBe(303);

    const { path, verifier, state, nonce } = await authorizationRequest(config, { scope: 'openid profile email' });
    const page = await person.get(path);
    expect(page.status, page.text).toBe(200);
    expect(page.text).toContain('Photo Printer');
    const allowed = await person.submit(page, { decision: 'allow' });
    expect(allowed.status, allowed.text).toBe(303);

    const tokens = await client.authorizationCodeGrant(config, new URL(allowed.headers.location), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: issuer.origin, sub: user.id, aud: view.client_id, nonce });
    expect(claims.sid).toEqual(expect.any(String));
    expect(tokens.refresh_token).toEqual(expect.any(String));

    const info = await client.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info).toMatchObject({ sub: user.id, name: 'Ada Lovelace', email: user.email, email_verified: false });

    // A refresh on the other instance: a new ID token with the same auth_time and sid, and no nonce.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    const again = refreshed.claims()!;
    expect(again).toMatchObject({ sub: user.id, auth_time: claims.auth_time, sid: claims.sid });
    expect(again.nonce).toBeUndefined();

    // Silent sign-in works from either instance while the session lives.
    for (let i = 0; i < 2; i++) {
      const silent = await authorizationRequest(config, { scope: 'openid', prompt: 'none' });
      const res = await person.get(silent.path);
      expect(res.status).toBe(302);
      expect(new URL(res.headers.location).searchParams.get('code')).toEqual(expect.any(String));
    }

    // RP-initiated logout with the ID token as hint, then the session is gone on both instances: even its old
    // cookie, sent again, signs nobody in.
    const cookie = person.cookies.get(SESSION_COOKIE)!;
    const logout = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: LOGOUT_URI,
      state: 'bye',
    });
    const out = await person.get(logout.pathname + logout.search);
    expect(out.status).toBe(302);
    expect(out.headers.location).toBe(`${LOGOUT_URI}?state=bye`);
    expect(person.cookies.has(SESSION_COOKIE)).toBe(false);
    person.cookies.set(SESSION_COOKIE, cookie);
    for (let i = 0; i < 2; i++) {
      const silent = await authorizationRequest(config, { scope: 'openid', prompt: 'none', state: `s${i}` });
      const res = await person.get(silent.path);
      expect(res.status).toBe(302);
      expect(Object.fromEntries(new URL(res.headers.location).searchParams)).toMatchObject({ error: 'login_required', state: `s${i}` });
    }

    // Both instances took part in each kind of step.
    for (const served of balancer.served) {
      expect(served.some((step) => step.startsWith('GET /authorize'))).toBe(true);
      expect(served.some((step) => step === 'POST /token')).toBe(true);
    }
    const all = balancer.served.flat();
    expect(all).toEqual(expect.arrayContaining(['GET /.well-known/openid-configuration', 'GET /userinfo', 'GET /end-session']));
  });
});
