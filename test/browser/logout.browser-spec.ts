import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { ARTIFACTS, type BrowserTest, startBrowserTest } from '../support/browser';
import { TEST_PASSWORD, type TestApp } from '../support/test-app';

describe('the OpenID Connect logout confirmation page in a real browser', () => {
  let env: BrowserTest;
  let t: TestApp;
  let browser: Browser;
  let issuer: string;

  beforeAll(async () => {
    env = await startBrowserTest();
    ({ t, browser, issuer } = env);
  });
  afterAll(() => env?.close());

  it('signs in at phone width, asks "Sign out?" for a logout without an ID token, signs out and returns to the client', async () => {
    const { email } = await t.createUser({ name: 'Logout Page User' });
    const client = await t.app.get(ClientsService).create({
      name: 'Acme Reports',
      redirectUris: [`${issuer}/demo/callback`],
      postLogoutRedirectUris: [`${issuer}/demo/callback`],
      trusted: true,
    });
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();

    await page.goto(`${issuer}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // A sign-in without return_to goes to /, which leads to the account pages.
    await page.waitForURL((url) => url.pathname === '/account/apps');
    expect(await page.locator('nav.account').innerText()).toContain(`Signed in as ${email}`);

    const logout = `${issuer}/end-session?${new URLSearchParams({
      client_id: client.client_id,
      post_logout_redirect_uri: `${issuer}/demo/callback`,
      state: 'logout-state',
    })}`;
    await page.goto(logout);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Sign out?');
    await expect(page.locator('p.lead').textContent()).resolves.toContain('Acme Reports asks to sign you out of your account here.');
    await expect(page.getByRole('button', { name: 'Stay signed in' }).isVisible()).resolves.toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'logout-confirm.png'), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/demo/callback');
    expect(new URL(page.url()).searchParams.get('state')).toBe('logout-state');
    const cookies = await context.cookies(issuer);
    expect(cookies.map((c) => c.name)).not.toContain('oauth_session');

    // Signed out: the account page sends the browser to the login page.
    await page.goto(`${issuer}/account/apps`);
    await page.waitForURL((url) => url.pathname === '/login');
    await context.close();
  });
});
