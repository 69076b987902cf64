import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { SESSION_COOKIE } from '../../src/oauth/interaction/cookies';
import { Browser, NO_RATE_LIMITS, PAGE_CSP, authorizePath, pkcePair, registerClient, signedIn, token } from '../support/oauth';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { type TestApp, createTestApp } from '../support/test-app';

const EVIL = 'https://evil.example/cb';
const EVIL_BYE = 'https://evil.example/bye';
/** A state an attacker would send to break out of an attribute. */
const HOSTILE_STATE = `"><script>alert('x')</script>&`;

/**
 * RFC 9700 4.11.2 and RP-Initiated Logout 1.0 2: the server redirects on its own only to URIs it trusts. A client
 * that chose its own redirect URIs (open registration, here) gets a page with a link instead, before any
 * interaction; so does a logout whose redirect no ID token of the client vouches for.
 */
describe('redirects an attacker controls', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, RATE_LIMIT_REGISTER: '1000', REGISTRATION: 'open' });
  });
  afterAll(() => t.close());

  /** What an attacker registers with REGISTRATION=open: their own redirect and post-logout URIs. */
  async function attackerClient(): Promise<{ client_id: string }> {
    const res = await t
      .http()
      .post('/register')
      .send({
        client_name: 'Example Corp',
        redirect_uris: [EVIL],
        post_logout_redirect_uris: [EVIL_BYE],
        token_endpoint_auth_method: 'none',
      });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { client_id: string };
  }

  /** The URI the link leads to: the redirect URI with the error, state and iss (RFC 9207). */
  function errorUri(error: string, description: string, state: string): string {
    const url = new URL(EVIL);
    url.searchParams.append('error', error);
    url.searchParams.append('error_description', description);
    url.searchParams.append('state', state);
    url.searchParams.append('iss', t.config.issuer);
    return url.href;
  }

  /** A page, not a redirect: the exact status, the pages' headers, and a link to `href`, HTML-escaped. */
  function expectLinkPage(res: Response, status: number, href: string): void {
    expect(res.status, res.text?.slice(0, 600)).toBe(status);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain(`<a href="${href.replaceAll('&', '&amp;')}" rel="noreferrer">`);
    expect(res.text).toContain(`<strong>${new URL(href).host}</strong>`);
    expect(res.text).not.toContain('<script');
  }

  /** An ID token this server signed for `clientId` (as the attacker gets for their own account and client). */
  async function idTokenOf(sub: string, clientId: string, sid: string = randomUUID()): Promise<string> {
    const key = t.app.get(SigningKeysService).activeKey();
    return new SignJWT({ sid })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
      .setIssuer(t.config.issuer)
      .setSubject(sub)
      .setAudience(clientId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key.privateKey);
  }

  describe('/authorize, before the person has seen a page', () => {
    it('shows errors found in the request as a page with a link, never a redirect to the client', async () => {
      const { client_id } = await attackerClient();
      const { challenge } = pkcePair();
      const pkce = { code_challenge: challenge, code_challenge_method: 'S256' };
      for (const [params, error, description] of [
        [{ scope: 'no-such-scope', ...pkce }, 'invalid_scope', 'Unknown scope: no-such-scope'],
        [{ scope: 'users:read' }, 'invalid_request', 'PKCE (code_challenge with S256) is required for public clients.'],
        [{ scope: 'users:read', prompt: 'none', ...pkce }, 'login_required', 'The user is not signed in, or not recently enough.'],
      ] as const) {
        const res = await new Browser(t).get(
          authorizePath({ response_type: 'code', client_id, redirect_uri: EVIL, state: HOSTILE_STATE, ...params }),
        );
        expectLinkPage(res, 400, errorUri(error, description, HOSTILE_STATE));
        expect(res.text).toContain(`${error}: ${description.replaceAll("'", '&#39;')}`);
      }
    });

    it('shows a scope the signed-in person cannot hold as a page too (a live session, nothing asked)', async () => {
      const { client_id } = await attackerClient();
      const { browser } = await signedIn(t);
      for (const prompt of [undefined, 'none']) {
        const res = await browser.get(
          authorizePath({
            response_type: 'code',
            client_id,
            redirect_uri: EVIL,
            scope: 'clients:admin',
            state: 's',
            code_challenge: pkcePair().challenge,
            code_challenge_method: 'S256',
            prompt,
          }),
        );
        expectLinkPage(res, 400, errorUri('invalid_scope', 'The requested scopes need a role the user does not have.', 's'));
      }
      // prompt=none with scopes not allowed before: the same page, for consent_required.
      const silent = await browser.get(
        authorizePath({
          response_type: 'code',
          client_id,
          redirect_uri: EVIL,
          scope: 'users:read',
          state: 's',
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
          prompt: 'none',
        }),
      );
      expectLinkPage(silent, 400, errorUri('consent_required', 'The user has not allowed this client these scopes.', 's'));
    });
  });

  describe('/end-session', () => {
    const logoutPath = (params: Record<string, string>) => `/end-session?${new URLSearchParams(params)}`;

    it('does not redirect to a registered post_logout_redirect_uri without an ID token hint: "Signed out" with a link', async () => {
      const { client_id } = await attackerClient();
      const operators = await registerClient(t, { postLogoutRedirectUris: ['https://app.example/bye'] });
      for (const [clientId, uri] of [
        [client_id, EVIL_BYE],
        [operators.client_id, 'https://app.example/bye'],
      ]) {
        const res = await new Browser(t).get(logoutPath({ client_id: clientId, post_logout_redirect_uri: uri, state: HOSTILE_STATE }));
        const href = new URL(uri);
        href.searchParams.append('state', HOSTILE_STATE);
        expectLinkPage(res, 200, href.href);
        expect(res.text).toContain('<h1>Signed out</h1>');
      }
    });

    it("does not redirect to a self-registered client's URI on the attacker's own ID token, with or without a session", async () => {
      const { client_id } = await attackerClient();
      const attacker = await t.createUser();
      const hint = await idTokenOf(attacker.id, client_id);
      const href = `${EVIL_BYE}?state=x`;
      const query = { id_token_hint: hint, post_logout_redirect_uri: EVIL_BYE, state: 'x' };
      expectLinkPage(await new Browser(t).get(logoutPath(query)), 200, href);

      // The victim's session is not the hint's: "Sign out?", and once they choose it, the page with the link.
      const { browser } = await signedIn(t);
      const page = await browser.get(logoutPath(query));
      expect(page.status).toBe(200);
      expect(page.text).toContain('<h1>Sign out?</h1>');
      const done = await browser.submit(page, { decision: 'logout' });
      expectLinkPage(done, 200, href);
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(false);
    });

    it("redirects with an ID token of the session it ends (the client's own logout), and an operator's client on any ID token of it", async () => {
      const { client_id } = await attackerClient();
      const client = { client_id, redirect_uris: [EVIL], name: 'Example Corp' } as ClientView;
      const { browser } = await signedIn(t);
      const pkce = pkcePair();
      const consent = await browser.get(
        authorizePath({
          response_type: 'code',
          client_id,
          redirect_uri: EVIL,
          scope: 'openid',
          state: 's',
          code_challenge: pkce.challenge,
          code_challenge_method: 'S256',
        }),
      );
      expect(consent.status).toBe(200);
      const code = new URL((await browser.submit(consent, { decision: 'allow' })).headers.location).searchParams.get('code')!;
      const tokens = await token(t, client, { grant_type: 'authorization_code', code, redirect_uri: EVIL, code_verifier: pkce.verifier });
      expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
      const res = await browser.get(logoutPath({ id_token_hint: tokens.body.id_token, post_logout_redirect_uri: EVIL_BYE, state: 'y' }));
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${EVIL_BYE}?state=y`);
      expect(browser.cookies.has(SESSION_COOKIE)).toBe(false);

      const operators = await registerClient(t, { postLogoutRedirectUris: ['https://app.example/bye'] });
      const hinted = await new Browser(t).get(
        logoutPath({
          id_token_hint: await idTokenOf(randomUUID(), operators.client_id),
          post_logout_redirect_uri: 'https://app.example/bye',
        }),
      );
      expect(hinted.status).toBe(302);
      expect(hinted.headers.location).toBe('https://app.example/bye');
    });
  });
});
