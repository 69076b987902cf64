import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { ROOT } from './service-process';
import { type TestApp, createListeningTestApp } from './test-app';

/** Where the browser suite leaves its screenshots. */
export const ARTIFACTS = join(ROOT, 'test/artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface BrowserTest {
  t: TestApp;
  /** The app's base URL (and its ISSUER): http://127.0.0.1:<a free port>, or http://localhost:<port>. */
  issuer: string;
  browser: Browser;
  close(): Promise<void>;
}

/**
 * The app listening on a free port of 127.0.0.1 and a headless Chromium (Debian's, or CHROMIUM_PATH) to drive it;
 * `hostname` is the name the browser uses for it (see createListeningTestApp).
 */
export async function startBrowserTest(env: Record<string, string> = {}, hostname?: string): Promise<BrowserTest> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const t = await createListeningTestApp(env, hostname);
  const issuer = t.origin;
  const browser = await chromium.launch({
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
  return {
    t,
    issuer,
    browser,
    async close() {
      await browser.close();
      await t.close();
    },
  };
}
