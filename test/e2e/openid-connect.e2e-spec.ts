import { createHash } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { DataSource } from 'typeorm';
import { hashSecret } from '../../src/crypto/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { SESSION_COOKIE } from '../../src/oauth/interaction/cookies';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  authorizePath,
  bearerChallenge,
  decodeJwt,
  login,
  parseForm,
  publishedJwks,
  redirectParams,
  registerClient,
  signedIn,
  sleep,
  token,
} from '../support/oauth';
import { relyingPartyOf } from '../support/openid';
import { type TestApp, bearer, createListeningTestApp } from '../support/test-app';

/**
 * OpenID Connect Core 1.0 (code flow), Discovery 1.0 and UserInfo, driven by openid-client (an OpenID-certified
 * relying party library) against the app listening on 127.0.0.1, plus the checks of the OpenID Foundation's Basic
 * OP conformance plan that apply to this server: nonce in the ID token exactly when sent, `aud` the client id,
 * `auth_time` present, `sub` the same in the ID token and at UserInfo, and an ID token signed with a rotated-out key
 * still verifying while that key stays published.
 */
describe('OpenID Connect (openid-client as the relying party)', () => {
  let t: TestApp;
  let issuer: URL;

  beforeAll(async () => {
    const listening = await createListeningTestApp(NO_RATE_LIMITS);
    t = listening;
    issuer = new URL(listening.origin);
  });
  afterAll(() => t.close());

  const relyingParty = (view: ClientView) => relyingPartyOf(issuer, view);

  /** The front channel as a signed-in browser (answering the consent page if one comes): the callback URL. */
  async function authorize(browser: Browser, config: client.Configuration, params: Record<string, string>): Promise<URL> {
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, ...params });
    expect(url.origin).toBe(issuer.origin);
    let res = await browser.get(url.pathname + url.search);
    if (res.status === 200) res = await browser.submit(res, { decision: 'allow' });
    expect([302, 303], res.text).toContain(res.status);
    return new URL(res.headers.location);
  }

  /** A complete code flow with PKCE, state and (unless `nonce: false`) a nonce; the RP checks everything it can. */
  async function codeFlow(view: ClientView, opts: { scope?: string; nonce?: boolean; browser?: Browser } = {}) {
    const config = await relyingParty(view);
    const session = opts.browser ? { browser: opts.browser, user: undefined } : await signedIn(t);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = opts.nonce === false ? undefined : client.randomNonce();
    const callback = await authorize(session.browser, config, {
      scope: opts.scope ?? 'openid profile email',
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...(nonce ? { nonce } : {}),
    });
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    return { config, tokens, nonce, browser: session.browser, user: session.user };
  }

  describe('discovery', () => {
    it('serves /.well-known/openid-configuration: the RFC 8414 metadata plus the OpenID fields, which openid-client accepts', async () => {
      const res = await t.http().get('/.well-known/openid-configuration');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const oauth = await t.http().get('/.well-known/oauth-authorization-server');
      expect(res.body).toEqual(oauth.body);
      expect(res.body).toMatchObject({
        issuer: issuer.origin,
        authorization_endpoint: `${issuer.origin}/authorize`,
        token_endpoint: `${issuer.origin}/token`,
        jwks_uri: `${issuer.origin}/.well-known/jwks.json`,
        userinfo_endpoint: `${issuer.origin}/userinfo`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        request_uri_parameter_supported: false,
      });
      expect(res.body.scopes_supported).toEqual(expect.arrayContaining(['openid', 'profile', 'email']));
      expect(res.body.claims_supported).toEqual(
        expect.arrayContaining([
          'sub',
          'iss',
          'aud',
          'auth_time',
          'amr',
          'nonce',
          'sid',
          'name',
          'gender',
          'updated_at',
          'email',
          'email_verified',
        ]),
      );
      expect(res.body.end_session_endpoint).toBe(`${issuer.origin}/end-session`);

      const config = await relyingParty(await registerClient(t, { trusted: true }));
      expect(config.serverMetadata()).toMatchObject({ issuer: issuer.origin, userinfo_endpoint: `${issuer.origin}/userinfo` });
    });
  });

  describe('the code flow with nonce and PKCE', () => {
    it('returns an ID token that openid-client validates, with iss, sub, aud = client id, exp, iat, auth_time, nonce and sid', async () => {
      const view = await registerClient(t, { trusted: true });
      const before = Math.floor(Date.now() / 1000);
      const { tokens, nonce, user } = await codeFlow(view);
      expect(tokens.scope).toBe('openid profile email');
      const claims = tokens.claims()!;
      expect(claims).toMatchObject({ iss: issuer.origin, sub: user!.id, aud: view.client_id, nonce });
      expect(claims.auth_time).toEqual(expect.any(Number));
      expect(claims.auth_time!).toBeLessThanOrEqual(before + 1);
      expect(claims.exp - claims.iat).toBe(t.config.accessTokenTtl);
      expect(claims.sid).toEqual(expect.any(String));
      // RFC 8176: signed in with a password only.
      expect(claims.amr).toEqual(['pwd']);
      // The access token is for the same user, signed in the same way.
      expect(decodeJwt(tokens.access_token).payload.sub).toBe(claims.sub);
      expect(decodeJwt(tokens.access_token).payload.amr).toEqual(['pwd']);

      const { header } = decodeJwt(tokens.id_token!);
      expect(header).toMatchObject({ alg: 'RS256', typ: 'JWT' });
      expect((await publishedJwks(t)).map((k) => k.kid)).toContain(header.kid);
    });

    it('carries the nonce through the consent page of a client that is not trusted, whose page names the scopes in words', async () => {
      const view = await registerClient(t, { trusted: false });
      const config = await relyingParty(view);
      const { browser, user } = await signedIn(t);
      const verifier = client.randomPKCECodeVerifier();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid profile email',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        nonce,
      });
      const page = await browser.get(url.pathname + url.search);
      expect(page.status).toBe(200);
      expect(page.text).toContain('Sign you in with your account here');
      expect(page.text).toContain('See your name and gender');
      expect(page.text).toContain('See your email address');
      expect(parseForm(page.text).hidden.nonce).toBe(nonce);
      const res = await browser.submit(page, { decision: 'allow' });
      const tokens = await client.authorizationCodeGrant(config, new URL(res.headers.location), {
        pkceCodeVerifier: verifier,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      expect(tokens.claims()).toMatchObject({ sub: user.id, nonce, aud: view.client_id });
    });

    it('puts a nonce in the ID token exactly when the request had one', async () => {
      const view = await registerClient(t, { trusted: true });
      const withNonce = await codeFlow(view);
      expect(withNonce.tokens.claims()!.nonce).toBe(withNonce.nonce);
      // Without: openid-client would refuse an ID token with a nonce nobody sent; the claim is not there at all.
      const without = await codeFlow(view, { nonce: false });
      expect(without.tokens.claims()).not.toHaveProperty('nonce');
      expect(decodeJwt(without.tokens.id_token!).payload).not.toHaveProperty('nonce');
    });

    it('keeps auth_time at the login of the session, not the time of each authorization', async () => {
      const view = await registerClient(t, { trusted: true });
      const user = await t.createUser();
      const browser = new Browser(t);
      const loginAt = Math.floor(Date.now() / 1000);
      expect((await login(browser, user.email)).status).toBe(303);
      const first = await codeFlow(view, { browser });
      await sleep(1100);
      const second = await codeFlow(view, { browser });
      const [a, b] = [first.tokens.claims()!, second.tokens.claims()!];
      expect(a.auth_time).toBeGreaterThanOrEqual(loginAt);
      expect(a.auth_time).toBeLessThanOrEqual(loginAt + 1);
      expect(b.auth_time).toBe(a.auth_time);
      expect(b.iat).toBeGreaterThan(a.iat);
      // The same session: the same sid, which is neither the cookie nor its hash (the session's stored id).
      expect(b.sid).toBe(a.sid);
      const cookie = browser.cookies.get(SESSION_COOKIE)!;
      expect(a.sid).not.toBe(cookie);
      expect(a.sid).not.toBe(createHash('sha256').update(cookie).digest('hex'));
      expect(a.sid).not.toBe(createHash('sha256').update(cookie).digest('base64url'));

      // A new login is a new session: a new sid and a later auth_time.
      await sleep(1100);
      const again = new Browser(t);
      expect((await login(again, user.email)).status).toBe(303);
      const third = (await codeFlow(view, { browser: again })).tokens.claims()!;
      expect(third.sid).not.toBe(a.sid);
      expect(third.auth_time).toBeGreaterThan(a.auth_time!);
    });

    it('on refresh, returns a new ID token that keeps sub, aud, auth_time and sid and has no nonce', async () => {
      const view = await registerClient(t, { trusted: true });
      const { config, tokens } = await codeFlow(view);
      const first = tokens.claims()!;
      await sleep(1100);
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      const claims = refreshed.claims()!;
      expect(claims).toMatchObject({ iss: first.iss, sub: first.sub, aud: view.client_id, auth_time: first.auth_time, sid: first.sid });
      expect(claims).not.toHaveProperty('nonce');
      expect(claims.iat).toBeGreaterThan(first.iat);

      // Narrowed to scopes without openid, the refresh is plain OAuth: no ID token.
      const narrowed = await token(t, view, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token!, scope: 'profile' });
      expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
      expect(narrowed.body).not.toHaveProperty('id_token');
    });

    it('issues no ID token without openid, and treats a request that leaves scope out as plain OAuth', async () => {
      const view = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      for (const scope of ['profile email orders:read', undefined]) {
        const res = await browser.get(authorizePath({ response_type: 'code', client_id: view.client_id, scope }));
        const code = redirectParams(res).get('code')!;
        const answer = await token(t, view, { grant_type: 'authorization_code', code });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body).not.toHaveProperty('id_token');
        expect(answer.body.scope.split(' ')).not.toContain('openid');
      }
      // Left out, the scope holds none of the OpenID Connect scopes (profile and email are released only by UserInfo).
      const res = await browser.get(authorizePath({ response_type: 'code', client_id: view.client_id }));
      const answer = await token(t, view, { grant_type: 'authorization_code', code: redirectParams(res).get('code')! });
      expect(answer.body.scope.split(' ').filter((s: string) => ['openid', 'profile', 'email'].includes(s))).toEqual([]);
    });

    it('serves a session an older instance wrote without auth_time and sid (an upgrade in progress): auth_time is its start', async () => {
      const view = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const dataSource = t.app.get(DataSource);
      const sessionHash = hashSecret(browser.cookies.get(SESSION_COOKIE)!);
      const [row] = (await dataSource.query(`SELECT created_at FROM sessions WHERE id = '${sessionHash}'`)) as { created_at: string }[];
      expect(row).toBeDefined();
      await dataSource.query(`UPDATE sessions SET auth_time = NULL, sid = NULL WHERE id = '${sessionHash}'`);
      const { tokens } = await codeFlow(view, { browser });
      const claims = tokens.claims()!;
      expect(claims.auth_time).toBe(Math.floor(Number(row.created_at) / 1000));
      expect(claims).not.toHaveProperty('sid');
    });

    it('refuses an empty or overlong nonce with invalid_request, sent back to the client', async () => {
      const view = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      // Empty, too long, a NUL (which PostgreSQL cannot store: never a 500), a line break, non-ASCII.
      for (const nonce of ['', 'n'.repeat(513), 'a\u0000b', 'a\nb', 'nonce-é']) {
        const res = await browser.get(
          authorizePath({
            response_type: 'code',
            client_id: view.client_id,
            redirect_uri: REDIRECT_URI,
            scope: 'openid',
            state: 's',
            nonce,
          }),
        );
        const q = redirectParams(res);
        expect(q.get('error')).toBe('invalid_request');
        expect(q.get('state')).toBe('s');
      }
    });
  });

  describe('UserInfo', () => {
    it('answers the claims of the scopes, with the sub of the ID token (GET and POST)', async () => {
      const view = await registerClient(t, { trusted: true });
      const { config, tokens, user } = await codeFlow(view);
      const sub = tokens.claims()!.sub;
      const info = await client.fetchUserInfo(config, tokens.access_token, sub);
      expect(info).toEqual({
        sub: user!.id,
        name: user!.name,
        gender: user!.gender,
        updated_at: Math.floor(Date.parse(user!.updatedAt) / 1000),
        email: user!.email,
        email_verified: false,
      });
      const viaPost = await t
        .http()
        .post('/userinfo')
        .set(...bearer(tokens.access_token))
        .type('form')
        .send('');
      expect(viaPost.status).toBe(200);
      expect(viaPost.headers['cache-control']).toBe('no-store');
      expect(viaPost.body).toEqual(info);
    });

    it('answers only sub for a token with openid alone, and only what each scope releases', async () => {
      const view = await registerClient(t, { trusted: true });
      const only = await codeFlow(view, { scope: 'openid' });
      const sub = only.tokens.claims()!.sub;
      expect(await client.fetchUserInfo(only.config, only.tokens.access_token, sub)).toEqual({ sub });
      const email = await codeFlow(view, { scope: 'openid email' });
      expect(Object.keys(await client.fetchUserInfo(email.config, email.tokens.access_token, client.skipSubjectCheck)).sort()).toEqual([
        'email',
        'email_verified',
        'sub',
      ]);
    });

    it('refuses a token without openid with 403 insufficient_scope, and a bad token (an ID token among them) with 401 invalid_token', async () => {
      const user = await t.createUser();
      const noOpenid = await t.token(user.id, 'profile email');
      const res = await t
        .http()
        .get('/userinfo')
        .set(...bearer(noOpenid));
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="openid"'));

      const view = await registerClient(t, { trusted: true });
      const { config, tokens } = await codeFlow(view);
      for (const bad of [tokens.id_token!, `${tokens.access_token}x`]) {
        const answer = await t
          .http()
          .get('/userinfo')
          .set(...bearer(bad));
        expect(answer.status).toBe(401);
        expect(answer.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="invalid_token"'));
      }
      await expect(client.fetchUserInfo(config, tokens.id_token!, client.skipSubjectCheck)).rejects.toMatchObject({
        cause: [expect.objectContaining({ scheme: 'bearer', parameters: expect.objectContaining({ error: 'invalid_token' }) })],
      });
      const none = await t.http().get('/userinfo');
      expect(none.status).toBe(401);
    });
  });

  describe('signing keys', () => {
    it('an ID token signed with a key rotated out still verifies against the JWKS while that key is published', async () => {
      const view = await registerClient(t, { trusted: true });
      const before = await codeFlow(view);
      const oldKid = decodeJwt(before.tokens.id_token!).header.kid;
      const newKid = await t.app.get(SigningKeysService).rotate();
      expect(newKid).not.toBe(oldKid);

      const jwks = createLocalJWKSet({ keys: await publishedJwks(t) });
      const { payload, protectedHeader } = await jwtVerify(before.tokens.id_token!, jwks, {
        issuer: issuer.origin,
        audience: view.client_id,
        algorithms: ['RS256'],
      });
      expect(protectedHeader.kid).toBe(oldKid);
      expect(payload.sub).toBe(before.tokens.claims()!.sub);

      // The relying party, which verifies signatures, follows to the new key as well.
      const after = await codeFlow(view);
      expect(decodeJwt(after.tokens.id_token!).header.kid).toBe(newKid);
      expect(after.tokens.claims()!.sub).toEqual(expect.any(String));
    });
  });
});
