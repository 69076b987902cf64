import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { ARTIFACTS, type BrowserTest, startBrowserTest } from '../support/browser';
import { TEST_PASSWORD, type TestApp } from '../support/test-app';

describe('the code flow in a real browser', () => {
  let env: BrowserTest;
  let t: TestApp;
  let browser: Browser;
  let issuer: string;
  let client: { client_id: string; client_secret?: string };
  let email: string;

  beforeAll(async () => {
    env = await startBrowserTest();
    ({ t, browser, issuer } = env);
    email = (await t.createUser({ name: 'Browser User' })).email;
    client = await t.app.get(ClientsService).create({
      name: 'Acme Reports',
      redirectUris: [`${issuer}/demo/callback`],
      scope: 'users:read orders:read',
    });
  });
  afterAll(() => env?.close());

  function authorizationUrl(state: string): string {
    return `${issuer}/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: `${issuer}/demo/callback`,
      scope: 'users:read orders:read',
      state,
    })}`;
  }

  it('signs in, shows the consent page at phone width, and delivers the code to the redirect URI', async () => {
    const started = Date.now();
    const page = await browser.newPage({ viewport: { width: 375, height: 740 } });
    await page.goto(authorizationUrl('browser-state'));

    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'login.png'), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

    // A wrong password first: a visible, generic error.
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the right password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('not correct');
    await page.screenshot({ path: join(ARTIFACTS, 'login-error.png'), fullPage: true });

    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/authorize');

    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain('Acme Reports');
    await expect(page.locator('ul.scopes').textContent()).resolves.toContain('orders:read');
    await page.screenshot({ path: join(ARTIFACTS, 'consent.png'), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.pathname === '/demo/callback');
    const landed = new URL(page.url());
    expect(landed.searchParams.get('state')).toBe('browser-state');
    expect(landed.searchParams.get('iss')).toBe(issuer);
    const code = landed.searchParams.get('code')!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await expect(page.locator('#code').textContent()).resolves.toBe(code);
    await page.screenshot({ path: join(ARTIFACTS, 'callback.png'), fullPage: true });

    const token = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: `${issuer}/demo/callback` }),
    });
    expect(token.status).toBe(200);
    expect(((await token.json()) as { scope: string }).scope).toBe('users:read orders:read');
    process.stdout.write(`browser flow took ${Date.now() - started} ms\n`);
    await page.close();
  });

  it('sends the user back with access_denied when consent is denied', async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();
    // A user who has not consented yet (the first test's user already allowed these scopes).
    const other = await t.createUser({ name: 'Second Browser User' });
    await page.goto(authorizationUrl('deny-state'));
    await page.getByLabel('Email').fill(other.email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/authorize');
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((url) => url.pathname === '/demo/callback');
    const landed = new URL(page.url());
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('state')).toBe('deny-state');
    expect(landed.searchParams.has('code')).toBe(false);
    await context.close();
  });
});
