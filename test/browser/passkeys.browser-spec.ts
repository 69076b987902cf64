import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type BrowserTest, startBrowserTest } from '../support/browser';
import { TEST_PASSWORD, type TestApp } from '../support/test-app';

/**
 * Passkeys in Chromium with its virtual authenticator (the WebAuthn domain of the DevTools protocol): a platform
 * authenticator that keeps discoverable credentials and verifies the person, so the page's real WebAuthn calls run.
 * The service is named `localhost` (a passkey's relying-party id is a domain, never an address).
 */
describe('passkeys in a real browser (virtual authenticator)', () => {
  let env: BrowserTest;
  let t: TestApp;
  let browser: Browser;
  let issuer: string;

  beforeAll(async () => {
    env = await startBrowserTest({}, 'localhost');
    ({ t, browser, issuer } = env);
  });
  afterAll(() => env?.close());

  it('registers a passkey at phone width, signs out, and signs in with it alone on a desktop, then as the second factor', async () => {
    const { email } = await t.createUser({ name: 'Passkey User' });
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });

    await page.goto(`${issuer}/account/security`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/account/security');
    await page.getByLabel('Name of the passkey').fill('Test phone');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.waitForURL((url) => url.pathname === '/account/security' && url.search === '');
    await expect(page.getByRole('heading', { level: 3 }).textContent()).resolves.toBe('Test phone');
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(ARTIFACTS, 'security-passkey.png'), fullPage: true });
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });

    // Signed out, then back with the passkey alone: no email typed.
    await page.goto(`${issuer}/account/apps`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.pathname === '/login');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${issuer}/login?return_to=%2Faccount%2Fsecurity`);
    await page.screenshot({ path: join(ARTIFACTS, 'login-passkey.png'), fullPage: true });
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.waitForURL((url) => url.pathname === '/account/security');
    await expect(page.locator('dl.when').textContent()).resolves.toMatch(/Last used\d{4}-\d\d-\d\d \d\d:\d\d UTC/);

    // With the password, the passkey is asked for next.
    await page.goto(`${issuer}/account/apps`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.pathname === '/login');
    await page.goto(`${issuer}/login?return_to=%2Faccount%2Fapps`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Use your passkey');
    // The page before the click: once clicked, the browser is between the authenticator and the next page.
    await page.screenshot({ path: join(ARTIFACTS, 'login-passkey-second-factor.png'), fullPage: true });
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.waitForURL((url) => url.pathname === '/account/apps');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Connected apps');
    await context.close();
  });
});
