import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients.service';
import { ROOT, freePort } from '../support/service-process';
import { TEST_PASSWORD, type TestApp, createTestApp } from '../support/test-app';

const ARTIFACTS = join(ROOT, 'test/artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('the OpenID Connect logout confirmation page in a real browser', () => {
  let t: TestApp;
  let browser: Browser;
  let issuer: string;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    t = await createTestApp({ ISSUER: issuer });
    await t.app.listen(port, '127.0.0.1');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

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
    await page.waitForURL((url) => url.pathname === '/');

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
