import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Browser,
  NO_RATE_LIMITS,
  authorizeCode,
  decodeJwt,
  login,
  parseForm,
  pkcePair,
  registerClient,
  signedIn,
  token,
  expectPage,
  auditEventsOf,
} from '../support/oauth';
import { type TestApp, createTestApp, createTwoInstances } from '../support/test-app';

const PAGE = '/account/security';
const KEY_ENCRYPTION_KEY = randomBytes(32).toString('base64');

/** The code an authenticator app shows for `secret`, `steps` periods of 30 s from now (RFC 6238, SHA-1, 6 digits). */
function codeOf(secret: string, steps = 0): string {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return totp.generate({ timestamp: Date.now() + steps * 30_000 });
}

/** A six-digit code that is none of the codes around now (so it cannot match by chance). */
function wrongCode(secret: string): string {
  const near = new Set([-1, 0, 1, 2].map((s) => codeOf(secret, s)));
  for (let n = 0; ; n++) {
    const code = String(n).padStart(6, '0');
    if (!near.has(code)) return code;
  }
}

describe('second factor: an authenticator app (TOTP) and recovery codes', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a, b, close } = await createTwoInstances({ ...NO_RATE_LIMITS, KEY_ENCRYPTION_KEY }));
  });
  afterAll(() => close());

  const events = (type: string, userId: string) => auditEventsOf(a, type, userId);

  /** A signed-in person who set up an authenticator on the page: its key and their recovery codes. */
  async function enrolled(t: TestApp = a) {
    const { user, browser } = await signedIn(t);
    const page = await browser.get(PAGE);
    expectPage(page, 200);
    expect(parseForm(page.text).action).toBe('/account/security/totp');
    const begun = await browser.submit(page);
    expectPage(begun, 200);
    expect(begun.text).toMatch(/<figure class="qr"><svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(begun.text)![1];
    expect(secret).toHaveLength(32);
    const confirmed = await browser.submit(begun, { code: codeOf(secret) });
    expectPage(confirmed, 200);
    const codes = [...confirmed.text.matchAll(/<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/code><\/li>/g)].map(
      (m) => m[1],
    );
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    return { user, browser, secret, codes };
  }

  /** A password sign-in in a new browser: the answer of POST /login (the code form when a second factor is set). */
  async function passwordStep(t: TestApp, email: string, returnTo?: string) {
    const browser = new Browser(t);
    const res = await login(browser, email, undefined, returnTo);
    return { browser, res };
  }

  it('sets up an authenticator on the account page: QR code and key, a first code confirms it, ten recovery codes shown once', async () => {
    const { user, browser, codes } = await enrolled();
    const after = await browser.get(PAGE);
    expectPage(after, 200);
    expect(after.text).toContain('Recovery codes left: 10.');
    expect(after.text).not.toContain(codes[0]);
    expect(parseForm(after.text).action).toBe('/account/security/totp/remove');
    expect((await events('factor.enrolled', user.id)).map((e) => e.details)).toEqual([{ factor: 'totp' }]);
    // At rest: the secret sealed with the key-encryption key, the recovery codes as hashes only.
    const db = a.app.get(DataSource);
    const [row] = (await db.query(`SELECT secret FROM totp_factors WHERE user_id = '${user.id}'`)) as { secret: string }[];
    expect(row.secret.startsWith('kek1.')).toBe(true);
    const stored = (await db.query(`SELECT code_hash FROM recovery_codes WHERE user_id = '${user.id}'`)) as { code_hash: string }[];
    expect(stored).toHaveLength(10);
    for (const { code_hash } of stored) expect(codes).not.toContain(code_hash);
  });

  it('refuses a wrong first code and keeps the authenticator unconfirmed: signing in still takes the password only', async () => {
    const { user, browser } = await signedIn(a);
    const begun = await browser.submit(await browser.get(PAGE));
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(begun.text)![1];
    const refused = await browser.submit(begun, { code: wrongCode(secret) });
    expectPage(refused, 400);
    expect(refused.text).toContain('The code does not match.');
    const { res } = await passwordStep(a, user.email);
    expect(res.status).toBe(303);
  });

  it('asks for a code after the password: no session until it matches; a wrong code is 401 and audited', async () => {
    const { user, secret } = await enrolled();
    const { browser, res } = await passwordStep(a, user.email, PAGE);
    expectPage(res, 200);
    expect(browser.cookies.has('oauth_session')).toBe(false);
    expect(browser.cookies.has('login_challenge')).toBe(true);
    expect(parseForm(res.text).action).toBe('/login/code');
    expect((await browser.get(PAGE)).status).toBe(302);

    const wrong = await browser.submit(res, { code: wrongCode(secret) });
    expectPage(wrong, 401);
    expect(wrong.text).toContain('The code is not correct, or it was used already.');
    expect(browser.cookies.has('oauth_session')).toBe(false);
    expect((await events('login.failed', user.id)).map((e) => e.details)).toEqual([{ reason: 'wrong second factor' }]);

    const signed = await browser.submit(wrong, { code: codeOf(secret, 1) });
    expect(signed.status).toBe(303);
    expect(signed.headers.location).toBe(PAGE);
    expect(browser.cookies.has('oauth_session')).toBe(true);
    expect(browser.cookies.has('login_challenge')).toBe(false);
    expectPage(await browser.get(PAGE), 200);
  });

  it('says how the person signed in: amr ["pwd", "otp", "mfa"] in ID and access tokens, from the code and again at a refresh', async () => {
    const { user, secret } = await enrolled();
    const { browser, res } = await passwordStep(a, user.email);
    expect((await browser.submit(res, { code: codeOf(secret, 1) })).status).toBe(303);
    const client = await registerClient(a, { trusted: true });
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, {
      scope: 'openid',
      redirect_uri: client.redirect_uris[0],
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    const issued = await token(a, client, {
      grant_type: 'authorization_code',
      code,
      code_verifier: pkce.verifier,
      redirect_uri: client.redirect_uris[0],
    });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(decodeJwt(issued.body.id_token).payload).toMatchObject({ sub: user.id, amr: ['pwd', 'otp', 'mfa'] });
    // RFC 9068 2.2.1: the access token says it too, for a resource server that wants a second factor.
    expect(decodeJwt(issued.body.access_token).payload.amr).toEqual(['pwd', 'otp', 'mfa']);
    const refreshed = await token(b, client, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(decodeJwt(refreshed.body.id_token).payload.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(decodeJwt(refreshed.body.access_token).payload.amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  it('accepts each code once: the same code in a second sign-in is refused, on the other instance too', async () => {
    const { user, secret } = await enrolled();
    const code = codeOf(secret, 1);
    const first = await passwordStep(a, user.email);
    expect((await first.browser.submit(first.res, { code })).status).toBe(303);
    // Replayed (a code read over someone's shoulder), on instance B.
    const second = await passwordStep(b, user.email);
    expectPage(await second.browser.submit(second.res, { code }), 401);
    // A code of a step before the one used is refused as well.
    const third = await passwordStep(b, user.email);
    expectPage(await third.browser.submit(third.res, { code: codeOf(secret) }), 401);
  });

  it('takes the password on one instance and the code on another (the sign-in waits in the database)', async () => {
    const { user, secret } = await enrolled();
    const onA = await passwordStep(a, user.email);
    const moved = new Browser(b);
    for (const [name, value] of onA.browser.cookies) moved.cookies.set(name, value);
    const signed = await moved.submit(onA.res, { code: codeOf(secret, 1) });
    expect(signed.status).toBe(303);
    expect(moved.cookies.has('oauth_session')).toBe(true);
  });

  it('signs in with a recovery code once (any case, with or without its hyphen), and counts what is left', async () => {
    const { user, codes } = await enrolled();
    const first = await passwordStep(a, user.email);
    const signed = await first.browser.submit(first.res, { code: codes[3].toUpperCase().replace('-', '') });
    expect(signed.status).toBe(303);
    expect((await events('recovery_code.used', user.id)).map((e) => e.details)).toEqual([{ left: 9 }]);
    const again = await passwordStep(b, user.email);
    expectPage(await again.browser.submit(again.res, { code: codes[3] }), 401);
    expect((await first.browser.get(PAGE)).text).toContain('Recovery codes left: 9.');
  });

  it('ends a sign-in after five wrong codes: even the right one then starts over at the password', async () => {
    const { user, secret } = await enrolled();
    const { browser, res } = await passwordStep(a, user.email);
    let page = res;
    for (let i = 0; i < 5; i++) {
      page = await browser.submit(page, { code: wrongCode(secret) });
      expectPage(page, 401);
    }
    const late = await browser.post('/login/code', { csrf: parseForm(page.text).hidden.csrf, code: codeOf(secret, 1) });
    expectPage(late, 401);
    expect(late.text).toContain('This sign-in has expired or had too many wrong codes.');
    expect(browser.cookies.has('oauth_session')).toBe(false);
    expect(browser.cookies.has('login_challenge')).toBe(false);
  });

  it('locks the authenticator after ten wrong codes in a row, over several sign-ins: then even the right code is refused for a while', async () => {
    const { user, secret } = await enrolled();
    for (let signIn = 0; signIn < 2; signIn++) {
      const { browser, res } = await passwordStep(signIn === 0 ? a : b, user.email);
      let page = res;
      for (let i = 0; i < 5; i++) {
        page = await browser.submit(page, { code: wrongCode(secret) });
        expectPage(page, 401);
      }
    }
    const locked = await passwordStep(a, user.email);
    const refused = await locked.browser.submit(locked.res, { code: codeOf(secret, 1) });
    expectPage(refused, 401);
    expect(refused.text).toContain('Too many wrong codes: codes from your app are refused for 15 minutes.');
    expect(locked.browser.cookies.has('oauth_session')).toBe(false);
    expect((await events('login.failed', user.id)).map((e) => e.details)).toContainEqual({ reason: 'second factor locked' });
    // Once the lock has passed (moved into the past here), the right code signs in.
    await a.app.get(DataSource).query(`UPDATE totp_factors SET locked_until = 1 WHERE user_id = '${user.id}'`);
    const later = await passwordStep(b, user.email);
    expect((await later.browser.submit(later.res, { code: codeOf(secret, 1) })).status).toBe(303);
  });

  it('refuses the code form without its CSRF token, and a code without a sign-in waiting for it', async () => {
    const { user, secret } = await enrolled();
    const { browser, res } = await passwordStep(a, user.email);
    expectPage(await browser.post('/login/code', { code: codeOf(secret, 1) }), 403);
    expectPage(await browser.post('/login/code', { csrf: 'x'.repeat(32), code: codeOf(secret, 1) }), 403);
    // A browser that never gave the password: its own CSRF cookie, no sign-in.
    const stranger = new Browser(a);
    const form = await stranger.get('/login');
    const alone = await stranger.post('/login/code', { csrf: parseForm(form.text).hidden.csrf, code: codeOf(secret, 1) });
    expectPage(alone, 401);
    expect(browser.cookies.has('oauth_session')).toBe(false);
    expect(res.status).toBe(200);
  });

  it('removes the authenticator with a current code (not without), and sign-in takes the password only again', async () => {
    const { user, browser, secret, codes } = await enrolled();
    const page = await browser.get(PAGE);
    expectPage(await browser.submit(page, { code: wrongCode(secret) }), 400);
    const removed = await browser.submit(page, { code: codes[0] });
    expect(removed.status).toBe(303);
    expect(removed.headers.location).toBe(PAGE);
    const after = await browser.get(PAGE);
    expect(parseForm(after.text).action).toBe('/account/security/totp');
    expect((await events('factor.removed', user.id)).map((e) => [e.actor, e.details])).toEqual([[`user:${user.id}`, { factor: 'totp' }]]);
    const { res } = await passwordStep(a, user.email);
    expect(res.status).toBe(303);
    const rows = (await a.app.get(DataSource).query(`SELECT code_hash FROM recovery_codes WHERE user_id = '${user.id}'`)) as unknown[];
    expect(rows).toHaveLength(0);
  });

  it('refuses the account forms without a session or with another CSRF token, and a second authenticator while one is active', async () => {
    const { browser } = await enrolled();
    const stranger = new Browser(a);
    expect((await stranger.get(PAGE)).headers.location).toBe(`/login?return_to=${encodeURIComponent(PAGE)}`);
    expectPage(await stranger.post('/account/security/totp', { csrf: 'x'.repeat(32) }), 403);
    expectPage(await browser.post('/account/security/totp', { csrf: 'x'.repeat(32) }), 403);
    const csrf = parseForm((await browser.get(PAGE)).text).hidden.csrf;
    const second = await browser.post('/account/security/totp', { csrf });
    expectPage(second, 409);
    expect(second.text).toContain('An authenticator is set up already');
  });
});

describe('MFA_REQUIRED_ROLES: people of these roles set up an authenticator before they are signed in', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, MFA_REQUIRED_ROLES: 'admin' });
  });
  afterAll(() => t.close());

  const keyOf = (page: Response) => /Key: <code>([A-Z2-7]+)<\/code>/.exec(page.text)![1];

  it('leads an administrator without one to set it up: no session before a first code matches, then the recovery codes and on', async () => {
    const admin = await t.createUser({ role: 'admin' });
    const browser = new Browser(t);
    const asked = await login(browser, admin.email, undefined, '/account/apps');
    expectPage(asked, 200);
    expect(asked.text).toContain('Your account needs a second factor');
    expect(parseForm(asked.text).action).toBe('/login/enrol');
    expect(browser.cookies.has('oauth_session')).toBe(false);
    expect((await browser.get('/account/apps')).status).toBe(302);

    const secret = keyOf(asked);
    const wrong = await browser.submit(asked, { code: wrongCode(secret) });
    expectPage(wrong, 400);
    expect(wrong.text).toContain('The code does not match.');
    // The same authenticator to scan again, not a new one.
    expect(keyOf(wrong)).toBe(secret);
    expect(browser.cookies.has('oauth_session')).toBe(false);

    const done = await browser.submit(wrong, { code: codeOf(secret) });
    expectPage(done, 200);
    expect(browser.cookies.has('oauth_session')).toBe(true);
    expect(browser.cookies.has('login_challenge')).toBe(false);
    const codes = [...done.text.matchAll(/<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/code><\/li>/g)].map((m) => m[1]);
    expect(codes).toHaveLength(10);
    expect(done.text).toContain('<a href="/account/apps">I have saved them</a>');
    expect((await browser.get('/account/apps')).status).toBe(200);

    // From now on the code is asked after the password; and the authenticator stays while the role needs it.
    const next = await login(new Browser(t), admin.email);
    expect(parseForm(next.text).action).toBe('/login/code');
    const page = await browser.get(PAGE);
    const removal = await browser.submit(page, { code: codes[0] });
    expectPage(removal, 409);
    expect(removal.text).toContain('Your account needs a second factor: add a passkey before you remove the authenticator.');
  });

  it('leaves people of other roles to choose: a password alone signs them in', async () => {
    const person = await t.createUser();
    const res = await login(new Browser(t), person.email);
    expect(res.status).toBe(303);
  });
});
