import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeDescription } from '../../src/auth/scopes';
import { OidcScope } from '../../src/oauth/oidc/oidc.scopes';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView } from '../../src/oauth/clients/client-metadata';
import { pkcePair } from '../support/oauth';
import { ARTIFACTS, type BrowserTest, startBrowserTest } from '../support/browser';
import { TEST_PASSWORD, type TestApp } from '../support/test-app';

/**
 * The pages OpenID Connect adds or changes, at phone width: the login form prefilled by `login_hint`, the consent
 * page naming the OpenID scopes in words, the step-up page (only the new scopes asked, the earlier ones listed as
 * allowed), and the "Signed out" page of a logout with an ID token and no redirect URI.
 */
describe('the OpenID Connect pages in a real browser', () => {
  let env: BrowserTest;
  let t: TestApp;
  let browser: Browser;
  let issuer: string;
  let client: ClientView;

  beforeAll(async () => {
    env = await startBrowserTest();
    ({ t, browser, issuer } = env);
    client = await t.app.get(ClientsService).create({
      name: 'Team Wiki',
      redirectUris: [`${issuer}/demo/callback`],
      scope: 'openid profile email orders:read',
    });
  });
  afterAll(() => env?.close());

  function authorizationUrl(scope: string, extra: Record<string, string> = {}): { url: string; verifier: string } {
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: `${issuer}/demo/callback`,
      scope,
      state: 'st',
      nonce: 'n-1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    });
    return { url: `${issuer}/authorize?${query}`, verifier };
  }

  async function fitsPhone(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, name), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
  }

  it('prefills the login form from login_hint, names the OpenID scopes in words, asks only for new scopes on a step-up, and says "Signed out"', async () => {
    const { email } = await t.createUser({ name: 'Wiki Reader' });
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();

    // 1. login_hint fills the email field, and the person types only the password.
    const first = authorizationUrl('openid profile email', { login_hint: email });
    await page.goto(first.url);
    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(email);
    await fitsPhone(page, 'oidc-login-hint.png');
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/authorize');

    // 2. The consent page says in words what each OpenID scope releases.
    const scopes = page.locator('ul.scopes').first();
    for (const scope of [OidcScope.openid, OidcScope.profile, OidcScope.email]) {
      await expect(scopes.textContent()).resolves.toContain(scopeDescription(scope));
    }
    await fitsPhone(page, 'oidc-consent.png');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.pathname === '/demo/callback');
    const code = new URL(page.url()).searchParams.get('code')!;
    const tokens = (await (
      await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: `${issuer}/demo/callback`,
          code_verifier: first.verifier,
        }),
      })
    ).json()) as { id_token: string };
    expect(tokens.id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    // 3. A step-up: only orders:read is asked; what was allowed before is listed as such.
    await page.goto(authorizationUrl('openid profile email orders:read').url);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain('Team Wiki');
    const asked = await page.locator('ul.scopes:not(.granted)').textContent();
    expect(asked).toContain('orders:read');
    expect(asked).not.toContain(scopeDescription(OidcScope.email));
    await expect(page.locator('ul.scopes.granted').textContent()).resolves.toContain(scopeDescription(OidcScope.email));
    await fitsPhone(page, 'oidc-step-up.png');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.pathname === '/demo/callback');
    expect(new URL(page.url()).searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // 4. A logout with the session's ID token and no redirect URI ends on this server's "Signed out" page.
    await page.goto(`${issuer}/end-session?${new URLSearchParams({ id_token_hint: tokens.id_token })}`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Signed out');
    await fitsPhone(page, 'oidc-signed-out.png');
    expect((await context.cookies(issuer)).map((c) => c.name)).not.toContain('oauth_session');
    await context.close();
  });
});
