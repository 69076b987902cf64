import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, NO_RATE_LIMITS, parseForms, signedIn } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

/** The account pages' frame, and where the service's own address leads. */
describe('the account pages', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  it('lead from / and /account to the first account page, and from there to sign-in when signed out', async () => {
    const browser = new Browser(t);
    const home = await browser.get('/');
    expect([home.status, home.headers.location]).toEqual([302, '/account']);
    const account = await browser.get('/account');
    expect([account.status, account.headers.location]).toEqual([302, '/account/apps']);
    const apps = await browser.get('/account/apps');
    expect([apps.status, apps.headers.location]).toEqual([302, '/login?return_to=%2Faccount%2Fapps']);
    expect((await browser.get('/?x=1')).status).toBe(400);
  });

  it('say who is signed in, link to each other (the current one marked), and end with the sign-out form', async () => {
    const { user, browser } = await signedIn(t, { email: 'frame.person@example.com' });
    for (const [path, other] of [
      ['/account/apps', '/account/security'],
      ['/account/security', '/account/apps'],
    ]) {
      const page = await browser.get(path);
      expect(page.status).toBe(200);
      expect(page.text).toContain(`Signed in as <strong>${user.email}</strong>`);
      expect(page.text).toContain(`<a href="${path}" aria-current="page">`);
      expect(page.text).toContain(`<a href="${other}">`);
      const forms = parseForms(page.text);
      expect(forms.at(-1)?.action).toBe('/logout');
    }
    // The frame's sign-out form signs out.
    const page = await browser.get('/account/security');
    const signOut = parseForms(page.text).at(-1)!;
    expect((await browser.post('/logout', signOut.hidden)).status).toBe(303);
    expect((await browser.get('/account/security')).status).toBe(302);
  });
});
