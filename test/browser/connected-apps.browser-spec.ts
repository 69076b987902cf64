import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { ARTIFACTS, type BrowserTest, startBrowserTest } from '../support/browser';
import { TEST_PASSWORD, type TestApp } from '../support/test-app';

describe('the connected-apps page in a real browser', () => {
  let env: BrowserTest;
  let t: TestApp;
  let browser: Browser;
  let issuer: string;

  beforeAll(async () => {
    env = await startBrowserTest();
    ({ t, browser, issuer } = env);
  });
  afterAll(() => env?.close());

  it('signs in at phone width, shows the granted app, revokes it and shows it gone', async () => {
    const { email } = await t.createUser({ name: 'Apps Page User' });
    const client = await t.app.get(ClientsService).create({
      name: 'Acme Reports',
      redirectUris: [`${issuer}/demo/callback`],
      scope: 'users:read orders:read',
    });
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();

    // Grant the app access through the consent page, as a person would.
    const authorization = `${issuer}/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: `${issuer}/demo/callback`,
      scope: 'users:read orders:read',
      state: 'apps-state',
    })}`;
    await page.goto(authorization);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/authorize');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.pathname === '/demo/callback');

    await page.goto(`${issuer}/account/apps`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Connected apps');
    const app = page.getByRole('listitem').filter({ has: page.getByRole('heading', { level: 2, name: 'Acme Reports' }) });
    await expect(app.count()).resolves.toBe(1);
    await expect(app.locator('ul.scopes').textContent()).resolves.toContain('orders:read');
    await expect(app.locator('dl.when').textContent()).resolves.toMatch(/Access granted\s*\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    await expect(page.getByRole('button', { name: 'Sign out' }).isVisible()).resolves.toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'connected-apps.png'), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

    await app.getByRole('button', { name: 'Revoke access' }).click();
    await page.waitForURL((url) => url.pathname === '/account/apps');
    await expect(page.getByRole('heading', { level: 2, name: 'Acme Reports' }).count()).resolves.toBe(0);
    await expect(page.locator('main').textContent()).resolves.toContain('No application has access to your account.');
    await page.screenshot({ path: join(ARTIFACTS, 'connected-apps-revoked.png'), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

    // Revoked: the app has to ask again.
    await page.goto(authorization);
    await expect(page.getByRole('button', { name: 'Allow' }).isVisible()).resolves.toBe(true);
    await context.close();
  });
});
