import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, type BrowserTest, startBrowserTest } from '../support/browser';
import { TEST_PASSWORD, type TestApp } from '../support/test-app';

/** What the person's authenticator app shows, `steps` periods of 30 s from now. */
function codeOf(secret: string, steps = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: Date.now() + steps * 30_000,
  });
}

describe('the sign-in security page and the code step in a real browser', () => {
  let env: BrowserTest;
  let t: TestApp;
  let browser: Browser;
  let issuer: string;

  beforeAll(async () => {
    env = await startBrowserTest();
    ({ t, browser, issuer } = env);
  });
  afterAll(() => env?.close());

  it('sets up an authenticator at phone width, then signs in with password and code on a desktop', async () => {
    const { email } = await t.createUser({ name: 'Second Factor User' });
    const phone = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await phone.newPage();
    await page.goto(`${issuer}/account/security`);
    await page.waitForURL((url) => url.pathname === '/login');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/account/security');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Sign-in security');

    await page.getByRole('button', { name: 'Set up an authenticator' }).click();
    const qr = page.locator('figure.qr svg');
    await expect(qr.isVisible()).resolves.toBe(true);
    const box = (await qr.boundingBox())!;
    expect(box.width).toBeGreaterThan(150);
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(ARTIFACTS, 'security-setup.png'), fullPage: true });
    const key = (await page.locator('p.lead code').textContent())!;
    expect(key).toMatch(/^[A-Z2-7]{32}$/);

    await page.getByLabel('Code from your app').fill(codeOf(key));
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect(page.locator('ul.codes li').count()).resolves.toBe(10);
    await page.screenshot({ path: join(ARTIFACTS, 'security-recovery-codes.png'), fullPage: true });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await phone.close();

    const desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const again = await desktop.newPage();
    await again.goto(`${issuer}/account/security`);
    await again.getByLabel('Email').fill(email);
    await again.getByLabel('Password').fill(TEST_PASSWORD);
    await again.getByRole('button', { name: 'Sign in' }).click();
    await expect(again.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Enter your code');
    await again.screenshot({ path: join(ARTIFACTS, 'login-code.png'), fullPage: true });
    await again.getByLabel('Code').fill(codeOf(key, 1));
    await again.getByRole('button', { name: 'Continue' }).click();
    await again.waitForURL((url) => url.pathname === '/account/security');
    await expect(again.locator('main').textContent()).resolves.toContain('Recovery codes left: 10.');
    await again.screenshot({ path: join(ARTIFACTS, 'security-active.png'), fullPage: true });
    await desktop.close();
  });
});

describe('MFA_REQUIRED_ROLES in a real browser: an administrator sets up an authenticator while signing in', () => {
  let env: BrowserTest;

  beforeAll(async () => {
    env = await startBrowserTest({ MFA_REQUIRED_ROLES: 'admin' });
  });
  afterAll(() => env?.close());

  it('shows the authenticator to set up after the password, then the recovery codes, then where the sign-in was going', async () => {
    const { t, browser, issuer } = env;
    const { email } = await t.createUser({ name: 'Policy Admin', role: 'admin' });
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
    const page = await context.newPage();
    await page.goto(`${issuer}/account/apps`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(TEST_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Set up an authenticator');
    await expect(page.locator('figure.qr svg').isVisible()).resolves.toBe(true);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(ARTIFACTS, 'login-enrol.png'), fullPage: true });
    const key = (await page.locator('p.lead code').textContent())!;

    await page.getByLabel('Code from your app').fill(codeOf(key));
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Your recovery codes');
    await expect(page.locator('ul.codes li').count()).resolves.toBe(10);
    await page.getByRole('link', { name: 'I have saved them' }).click();
    await page.waitForURL((url) => url.pathname === '/account/apps');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Connected apps');
    await context.close();
  });
});
