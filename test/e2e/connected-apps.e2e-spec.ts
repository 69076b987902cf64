import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { scopeDescription } from '../../src/auth/scopes';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  PAGE_CSP,
  REDIRECT_URI,
  authorizePath,
  backChannel,
  expectOAuthError,
  issueTokens,
  login,
  parseForm,
  parseForms,
  redirectParams,
  registerClient,
  resourceStatus,
  signedIn,
  sleep,
  token,
} from '../support/oauth';
import { type TestApp, createTwoInstances } from '../support/test-app';

const PAGE = '/account/apps';
const REVOKE = '/account/apps/revoke';

interface ListedApp {
  name: string;
  clientId: string;
  scopes: string[];
  grantedAt: number;
  /** null when the page says no token is in force. */
  lastUsedAt: number | null;
}

/** The apps a connected-apps page lists, read from its markup (one card per app, ending with its Revoke form). */
function listedApps(page: Response): ListedApp[] {
  return [...page.text.matchAll(/<li class="card">([\s\S]*?<\/form>)<\/li>/g)].map(([, card]) => {
    const time = (label: string) => {
      const m = new RegExp(`<dt>${label}</dt><dd><time datetime="([^"]+)">`).exec(card);
      return m ? Date.parse(m[1]) : null;
    };
    const form = parseForm(card);
    expect(form.method).toBe('post');
    expect(form.action).toBe(REVOKE);
    return {
      name: /<h2>([^<]*)<\/h2>/.exec(card)![1],
      clientId: form.hidden.client_id,
      scopes: [...card.matchAll(/<code>([^<]*)<\/code>/g)].map((m) => m[1]),
      grantedAt: time('Access granted')!,
      lastUsedAt: time('Last used'),
    };
  });
}

/** The Revoke form of one app on the page, as a browser would submit it. */
function revokeFields(page: Response, clientId: string): Record<string, string> {
  const form = parseForms(page.text).find((f) => f.action === REVOKE && f.hidden.client_id === clientId);
  if (!form) throw new Error(`no Revoke form for ${clientId}`);
  expect(Object.keys(form.hidden).sort()).toEqual(['client_id', 'csrf']);
  return form.hidden;
}

function expectHtmlPage(res: Response, status: number): void {
  expect(res.status, res.text.slice(0, 300)).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers.location).toBeUndefined();
}

describe('the connected-apps page (/account/apps)', () => {
  let t: TestApp;
  /** A second instance on the same database, to see revocation reach another instance. */
  let peer: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a: t, b: peer, close } = await createTwoInstances({ ...NO_RATE_LIMITS, REVOCATION_SYNC_SECONDS: '1' }));
  });
  afterAll(() => close?.());

  const page = async (browser: Browser): Promise<Response> => {
    const res = await browser.get(PAGE);
    expectHtmlPage(res, 200);
    return res;
  };
  const refresh = (client: ClientView, refreshToken: string) =>
    token(t, client, { grant_type: 'refresh_token', refresh_token: refreshToken });
  /** GET /authorize for a client as the browser: a 302 with a code when no consent is needed, else the consent page. */
  const authorize = (browser: Browser, client: ClientView, scope: string) =>
    browser.get(authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI, state: 'again', scope }));

  describe('without a login session', () => {
    it('redirects to /login?return_to=/account/apps (302), and the login comes back to the page', async () => {
      const browser = new Browser(t);
      const res = await browser.get(PAGE);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe('/login?return_to=%2Faccount%2Fapps');
      expect(res.text).toBe('');

      const user = await t.createUser();
      const signIn = await login(browser, user.email, undefined, PAGE);
      expect(signIn.status).toBe(303);
      expect(signIn.headers.location).toBe(PAGE);
      await page(browser);
    });

    it('redirects a cookie naming no live session the same way', async () => {
      for (const value of ['not-a-session', 'x'.repeat(500)]) {
        const res = await t.http().get(PAGE).set('Cookie', `oauth_session=${value}`).redirects(0);
        expect(res.status).toBe(302);
        expect(res.headers.location).toBe('/login?return_to=%2Faccount%2Fapps');
      }
    });

    it('answers a revoke without a session 403 and revokes nothing', async () => {
      const issued = await issueTokens(t);
      const res = await t.http().post(REVOKE).type('form').send({ client_id: issued.client.client_id, csrf: 'whatever-token-value' });
      expectHtmlPage(res, 403);
      expect(res.text).toContain('Request refused');
      expect(await resourceStatus(t, issued.access)).toBe(200);
      expect((await refresh(issued.client, issued.refresh)).status).toBe(200);
    });
  });

  describe('GET /account/apps', () => {
    it('lists each app the person granted: its name, the scopes granted, when access was granted and last used', async () => {
      const { user, browser } = await signedIn(t);
      const before = Date.now();
      const consented = await registerClient(t, { name: 'Photo <Printer> & Co', scope: 'orders:read users:read orders:write' });
      const first = await issueTokens(t, { client: consented, browser, scope: 'orders:read users:read' });
      const trusted = await registerClient(t, { name: 'Acme Intranet', trusted: true });
      await issueTokens(t, { client: trusted, browser, scope: 'users:read' });
      const after = Date.now();
      // Another person's app is not theirs to see.
      await issueTokens(t, { client: await registerClient(t, { name: 'Someone Else App', trusted: true }) });

      const res = await page(browser);
      expect(first.userId).toBe(user.id);
      const apps = listedApps(res);
      expect(apps.map((a) => a.clientId).sort()).toEqual([consented.client_id, trusted.client_id].sort());
      const photo = apps.find((a) => a.clientId === consented.client_id)!;
      expect(photo.name).toBe('Photo &lt;Printer&gt; &amp; Co');
      expect(res.text).not.toContain('<Printer>');
      expect(res.text).not.toContain('Someone Else App');
      expect(photo.scopes).toEqual(['orders:read', 'users:read']);
      expect(res.text).toContain(scopeDescription('orders:read'));
      expect(photo.grantedAt).toBeGreaterThanOrEqual(before);
      expect(photo.lastUsedAt).toBeGreaterThanOrEqual(photo.grantedAt);
      expect(photo.lastUsedAt).toBeLessThanOrEqual(after);
      const acme = apps.find((a) => a.clientId === trusted.client_id)!;
      expect(acme).toMatchObject({ name: 'Acme Intranet', scopes: ['users:read'] });
      expect(acme.grantedAt).toBeGreaterThanOrEqual(photo.grantedAt);
      expect(acme.lastUsedAt).toBeLessThanOrEqual(after);
      // The forms: one Revoke per app with the session's CSRF token, and sign-out.
      const forms = parseForms(res.text);
      expect(forms.map((f) => `${f.method} ${f.action}`)).toEqual([`post ${REVOKE}`, `post ${REVOKE}`, 'post /logout']);
      expect(new Set(forms.slice(0, 2).map((f) => f.hidden.csrf)).size).toBe(1);
      expect(forms[0].hidden.csrf).toMatch(/^[A-Za-z0-9_-]{32}$/);
    });

    it('lists one app once for several grants, and takes the last use from the newest refresh-token rotation', async () => {
      const { browser } = await signedIn(t);
      const client = await registerClient(t, { trusted: true });
      const a = await issueTokens(t, { client, browser, scope: 'orders:read' });
      await issueTokens(t, { client, browser, scope: 'users:read' });
      const [listed] = listedApps(await page(browser));
      expect(listed.scopes).toEqual(['orders:read', 'users:read']);

      await sleep(5);
      const rotatedFrom = Date.now();
      expect((await refresh(client, a.refresh)).status).toBe(200);
      const [after] = listedApps(await page(browser));
      expect(after.grantedAt).toBe(listed.grantedAt);
      expect(after.lastUsedAt).toBeGreaterThanOrEqual(rotatedFrom);
      expect(after.lastUsedAt).toBeGreaterThan(listed.lastUsedAt!);
    });

    it('says when no app has access', async () => {
      const { browser } = await signedIn(t);
      const res = await page(browser);
      expect(listedApps(res)).toEqual([]);
      expect(res.text).toContain('No application has access to your account.');
      expect(parseForms(res.text).map((f) => `${f.method} ${f.action}`)).toEqual(['post /logout']);
    });

    it('sends the security headers of the login and consent pages: CSP, no framing, no referrer, no caching, nosniff', async () => {
      const { browser } = await signedIn(t);
      const res = await page(browser);
      expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-request-id']).toMatch(/\S/);
    });

    it('answers a query parameter 400 (problem+json), as every route that takes none', async () => {
      const { browser } = await signedIn(t);
      const res = await browser.get(`${PAGE}?tab=all`);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.errors).toEqual([{ field: 'tab', message: 'tab is not an allowed query parameter' }]);
    });

    it('signs out through the page: POST /logout ends the session, and the page then sends to the login', async () => {
      const { browser } = await signedIn(t);
      const signOut = parseForms((await page(browser)).text).find((f) => f.action === '/logout')!;
      expect(signOut.hidden).toEqual({ csrf: expect.stringMatching(/^[A-Za-z0-9_-]{32,}$/) });
      const res = await browser.post('/logout', signOut.hidden);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe('/login');
      const again = await browser.get(PAGE);
      expect(again.status).toBe(302);
      expect(again.headers.location).toBe('/login?return_to=%2Faccount%2Fapps');
    });
  });

  describe('POST /account/apps/revoke', () => {
    it('revokes the app: 303 back to the page, the refresh token invalid_grant, the access token 401 on every instance, consent asked again', async () => {
      const { browser } = await signedIn(t);
      const client = await registerClient(t, { name: 'Consent Needing App', scope: 'orders:read' });
      const issued = await issueTokens(t, { client, browser, scope: 'orders:read' });
      expect(await resourceStatus(peer, issued.access)).toBe(200);
      // Consented before: authorization skips the page.
      expect(redirectParams(await authorize(browser, client, 'orders:read')).get('code')).toMatch(/\S/);

      const res = await browser.post(REVOKE, revokeFields(await page(browser), client.client_id));
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(PAGE);
      expect(res.headers['set-cookie']).toBeUndefined();
      // The audit trail has it: the person, the client, this request.
      const audit = await t.app
        .get(AuditService)
        .list(Object.assign(new AuditEventsQueryDto(), { type: 'grant.revoked', client_id: client.client_id }));
      expect(audit.data).toEqual([
        expect.objectContaining({
          actor: `user:${issued.userId}`,
          user_id: issued.userId,
          request_id: res.headers['x-request-id'],
          details: { grants: 2, consent_withdrawn: true },
        }),
      ]);

      expectOAuthError(await refresh(client, issued.refresh), 400, 'invalid_grant');
      expect(await resourceStatus(t, issued.access)).toBe(401);
      await sleep(1_600);
      expect(await resourceStatus(peer, issued.access)).toBe(401);
      expect(listedApps(await page(browser))).toEqual([]);
      const ask = await authorize(browser, client, 'orders:read');
      expectHtmlPage(ask, 200);
      expect(parseForm(ask.text).action).toBe('/authorize/consent');
    });

    it('revokes every grant of the person for that client, the code not redeemed yet too, and no other client', async () => {
      const { browser } = await signedIn(t);
      const client = await registerClient(t, { trusted: true });
      const kept = await issueTokens(t, { browser });
      const a = await issueTokens(t, { client, browser });
      const b = await issueTokens(t, { client, browser });
      const pending = redirectParams(await authorize(browser, client, 'users:read')).get('code')!;

      expect((await browser.post(REVOKE, revokeFields(await page(browser), client.client_id))).status).toBe(303);
      for (const issued of [a, b]) {
        expect(await resourceStatus(t, issued.access)).toBe(401);
        expectOAuthError(await refresh(client, issued.refresh), 400, 'invalid_grant');
      }
      expectOAuthError(
        await token(t, client, { grant_type: 'authorization_code', code: pending, redirect_uri: REDIRECT_URI }),
        400,
        'invalid_grant',
      );
      expect(await resourceStatus(t, kept.access)).toBe(200);
      expect((await refresh(kept.client, kept.refresh)).status).toBe(200);
      expect(listedApps(await page(browser)).map((app) => app.clientId)).toEqual([kept.client.client_id]);
    });

    it('revokes an app that only a consent is left of (its grant revoked by the client): it is listed, then gone', async () => {
      const { browser } = await signedIn(t);
      const client = await registerClient(t, { scope: 'orders:read' });
      const issued = await issueTokens(t, { client, browser, scope: 'orders:read' });
      expect((await backChannel(t, '/revoke', client, { token: issued.refresh })).status).toBe(200);
      const [listed] = listedApps(await page(browser));
      expect(listed).toMatchObject({ clientId: client.client_id, scopes: ['orders:read'], lastUsedAt: null });

      expect((await browser.post(REVOKE, revokeFields(await page(browser), client.client_id))).status).toBe(303);
      expect(listedApps(await page(browser))).toEqual([]);
      expect(parseForm((await authorize(browser, client, 'orders:read')).text).action).toBe('/authorize/consent');
    });

    it("refuses a missing, wrong or other session's CSRF token with 403 and revokes nothing", async () => {
      const { browser } = await signedIn(t);
      const client = await registerClient(t, { trusted: true });
      const issued = await issueTokens(t, { client, browser });
      const fields = revokeFields(await page(browser), client.client_id);
      const otherSession = await signedIn(t);
      const foreignCsrf = parseForms((await page(otherSession.browser)).text)[0].hidden.csrf;

      for (const csrf of [undefined, '', 'x', fields.csrf.slice(1), `${fields.csrf}x`, foreignCsrf]) {
        const res = await browser.post(REVOKE, { client_id: client.client_id, csrf });
        expectHtmlPage(res, 403);
        expect(res.text).toContain('The form has expired.');
        expect(res.text).toContain(`href="${PAGE}"`);
        expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
        expect(res.headers['x-frame-options']).toBe('DENY');
      }
      expect(await resourceStatus(t, issued.access)).toBe(200);
      expect((await refresh(client, issued.refresh)).status).toBe(200);
      expect(listedApps(await page(browser)).map((a) => a.clientId)).toEqual([client.client_id]);
    });

    it('answers a malformed client id 400 and an unknown one 404 (HTML pages), never a 500', async () => {
      const { browser } = await signedIn(t);
      const client = await registerClient(t, { trusted: true });
      const issued = await issueTokens(t, { client, browser });
      const { csrf } = revokeFields(await page(browser), client.client_id);

      for (const clientId of [undefined, '', 'x'.repeat(65), 'bad\u0000id', 'bad\nid']) {
        const res = await browser.post(REVOKE, { client_id: clientId, csrf });
        expectHtmlPage(res, 400);
        expect(res.text).toContain('The request does not name an application.');
      }
      const repeated = await t
        .http()
        .post(REVOKE)
        .set('Cookie', [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '))
        .type('form')
        .send(`client_id=${client.client_id}&client_id=${client.client_id}&csrf=${csrf}`);
      expectHtmlPage(repeated, 400);
      for (const clientId of ['no-such-client', 'x'.repeat(64), "' OR 1=1 --"]) {
        const res = await browser.post(REVOKE, { client_id: clientId, csrf });
        expectHtmlPage(res, 404);
        expect(res.text).toContain('This application has no access to your account.');
      }
      expect(await resourceStatus(t, issued.access)).toBe(200);
    });

    it("never touches another person's grants: B revoking A's client with B's own session", async () => {
      const client = await registerClient(t, { name: 'Shared App', scope: 'orders:read users:read' });
      const alice = await signedIn(t);
      const aliceTokens = await issueTokens(t, { client, browser: alice.browser, scope: 'orders:read' });
      const bob = await signedIn(t);
      // B's own CSRF token, from the Revoke form of an app of B's.
      const bobApp = await issueTokens(t, { browser: bob.browser });
      const bobCsrf = revokeFields(await page(bob.browser), bobApp.client.client_id).csrf;

      // B has no grant for the client: nothing of theirs to revoke, and nothing of A's is touched.
      const res = await bob.browser.post(REVOKE, { client_id: client.client_id, csrf: bobCsrf });
      expectHtmlPage(res, 404);
      expect(res.text).not.toContain(alice.user.email);
      expect(await resourceStatus(t, aliceTokens.access)).toBe(200);
      const rotated = await refresh(client, aliceTokens.refresh);
      expect(rotated.status).toBe(200);
      expect(redirectParams(await authorize(alice.browser, client, 'orders:read')).get('code')).toMatch(/\S/);

      // B grants the same client too and revokes it: B's grant dies, A's lives on with A's consent.
      const bobTokens = await issueTokens(t, { client, browser: bob.browser, scope: 'users:read' });
      expect((await bob.browser.post(REVOKE, revokeFields(await page(bob.browser), client.client_id))).status).toBe(303);
      expect(await resourceStatus(t, bobTokens.access)).toBe(401);
      expectOAuthError(await refresh(client, bobTokens.refresh), 400, 'invalid_grant');
      expect(await resourceStatus(t, aliceTokens.access)).toBe(200);
      expect((await refresh(client, rotated.body.refresh_token)).status).toBe(200);
      expect(redirectParams(await authorize(alice.browser, client, 'orders:read')).get('code')).toMatch(/\S/);
      expect(listedApps(await page(alice.browser)).map((a) => a.clientId)).toEqual([client.client_id]);
      expect(listedApps(await page(bob.browser)).map((a) => a.clientId)).toEqual([bobApp.client.client_id]);
    });
  });
});
