import argon2 from 'argon2';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grant } from '../../src/oauth/entities/grant.entity';
import { SESSION_COOKIE } from '../../src/oauth/interaction/cookies';
import { User } from '../../src/users/user.entity';
import { UsersRepository } from '../../src/users/users.repository';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  authorizePath,
  login,
  parseForm,
  parseForms,
  redirectParams,
  registerClient,
  setCookies,
  signedIn,
  sleep,
} from '../support/oauth';
import { TEST_PASSWORD, type TestApp, createTestApp } from '../support/test-app';

function sessionCookie(res: Response): string | undefined {
  return setCookies(res).find((c) => c.startsWith(`${SESSION_COOKIE}=`));
}

/** The session's CSRF token, as the sign-out form of the connected-apps page carries it. */
function logoutToken(html: string): string {
  return parseForms(html).find((f) => f.action === '/logout')!.hidden.csrf;
}

function cookieAttributes(cookie: string): string[] {
  return cookie
    .split(';')
    .slice(1)
    .map((a) => a.trim().toLowerCase());
}

/** The generic failure text of a login page (the alert), without the rest of the page. */
function failureMessage(res: Response): string {
  const m = /role="alert"[^>]*>([^<]*)</.exec(res.text);
  if (!m) throw new Error('the page has no alert');
  return m[1];
}

describe('login session', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  describe('GET /login', () => {
    it('renders a form posting email, password and the hidden return_to and csrf fields to /login', async () => {
      const res = await new Browser(t).get('/login?return_to=%2Fauthorize%3Fclient_id%3Dabc%26state%3Dx');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      const form = parseForm(res.text);
      expect(form.method?.toLowerCase()).toBe('post');
      expect(form.action).toBe('/login');
      expect(form.inputs.email).toBe('email');
      expect(form.inputs.password).toBe('password');
      expect(form.hidden.return_to).toBe('/authorize?client_id=abc&state=x');
      expect(form.hidden.csrf).toMatch(/^\S{16,}$/);
    });

    it('cannot be framed and sends no referrer', async () => {
      const res = await new Browser(t).get('/login');
      expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    });

    it('puts / into the form when return_to is not a relative path on this server', async () => {
      for (const returnTo of ['https://evil.example', '//evil.example', '/\\evil.example', 'javascript:alert(1)']) {
        const res = await new Browser(t).get(`/login?return_to=${encodeURIComponent(returnTo)}`);
        expect(parseForm(res.text).hidden.return_to).toBe('/');
      }
    });
  });

  describe('POST /login', () => {
    it('answers a wrong password with 401, the form again and the generic message, and no session', async () => {
      const user = await t.createUser();
      const browser = new Browser(t);
      const res = await login(browser, user.email, 'wrong password for sure');
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(parseForm(res.text).action).toBe('/login');
      // One generic message that says neither which part was wrong nor whether the account exists.
      expect(failureMessage(res)).toMatch(/\S/);
      expect(failureMessage(res)).not.toContain(user.email);
      expect(sessionCookie(res)).toBeUndefined();
      expect(res.text).not.toContain('wrong password for sure');
    });

    it('answers an unknown email with the same 401 and the same message as a wrong password', async () => {
      const user = await t.createUser();
      const wrongPassword = await login(new Browser(t), user.email, 'wrong password for sure');
      const unknownEmail = await login(new Browser(t), 'nobody-at-all@example.com', TEST_PASSWORD);
      expect(unknownEmail.status).toBe(401);
      expect(failureMessage(unknownEmail)).toBe(failureMessage(wrongPassword));
      expect(sessionCookie(unknownEmail)).toBeUndefined();
    });

    it('answers an empty or oversized submission with the same 401', async () => {
      const user = await t.createUser();
      const generic = failureMessage(await login(new Browser(t), user.email, 'wrong password for sure'));
      for (const [email, password] of [
        ['', TEST_PASSWORD],
        [user.email, ''],
        [user.email, 'x'.repeat(5000)],
        [`${'a'.repeat(300)}@example.com`, TEST_PASSWORD],
      ]) {
        const res = await login(new Browser(t), email, password);
        expect(res.status).toBe(401);
        expect(failureMessage(res)).toBe(generic);
      }
    });

    it('signs in with the right password, sets an HttpOnly SameSite=Lax session cookie (not Secure on http) and redirects to return_to', async () => {
      const user = await t.createUser();
      const res = await login(new Browser(t), user.email, TEST_PASSWORD, '/authorize?client_id=abc');
      expect([302, 303]).toContain(res.status);
      expect(res.headers.location).toBe('/authorize?client_id=abc');
      const cookie = sessionCookie(res);
      expect(cookie).toBeDefined();
      const attrs = cookieAttributes(cookie!);
      expect(attrs).toContain('httponly');
      expect(attrs).toContain('samesite=lax');
      expect(attrs).not.toContain('secure');
      expect(attrs).toContain('path=/');
    });

    it('compares the email case-insensitively', async () => {
      const user = await t.createUser();
      const res = await login(new Browser(t), user.email.toUpperCase());
      expect(res.status).toBe(303);
    });

    it('starts a new session id at every login (no session fixation)', async () => {
      const user = await t.createUser();
      const browser = new Browser(t);
      browser.cookies.set(SESSION_COOKIE, 'attacker-chosen-value');
      await login(browser, user.email);
      const first = browser.cookies.get(SESSION_COOKIE);
      expect(first).not.toBe('attacker-chosen-value');
      await login(browser, user.email);
      expect(browser.cookies.get(SESSION_COOKIE)).not.toBe(first);
    });

    it("ends the other person's session when someone else signs in in the same browser (switching accounts)", async () => {
      const client = await registerClient(t, { trusted: true });
      const path = authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI });
      const { browser } = await signedIn(t);
      const first = browser.cookies.get(SESSION_COOKIE)!;
      const other = await t.createUser();
      expect((await login(browser, other.email)).status).toBe(303);
      expect(redirectParams(await browser.get(path)).get('code')).toEqual(expect.any(String));
      // The first person's cookie, kept somewhere, signs nobody in any more.
      const replay = new Browser(t);
      replay.cookies.set(SESSION_COOKIE, first);
      expect((await replay.get(path)).headers.location).toMatch(/^\/login\?return_to=/);
    });

    it('redirects to / when return_to points anywhere but a relative path on this server', async () => {
      const user = await t.createUser();
      for (const returnTo of [
        'https://evil.example',
        '//evil.example',
        '/\\evil.example',
        'javascript:alert(1)',
        '/%2F%2Fevil.example',
        '\\\\evil.example',
        ' //evil.example',
      ]) {
        const browser = new Browser(t);
        const page = await browser.get('/login');
        const res = await browser.submit(page, { email: user.email, password: TEST_PASSWORD, return_to: returnTo });
        expect([302, 303]).toContain(res.status);
        const target = new URL(res.headers.location, 'http://this-server.invalid');
        expect(target.origin, returnTo).toBe('http://this-server.invalid');
        expect(res.headers.location.startsWith('//')).toBe(false);
        if (returnTo !== '/%2F%2Fevil.example') expect(res.headers.location, returnTo).toBe('/');
      }
    });

    it('refuses a POST without a csrf token with 403 and sets no session', async () => {
      const user = await t.createUser();
      const browser = new Browser(t);
      const page = await browser.get('/login');
      const res = await browser.submit(page, { email: user.email, password: TEST_PASSWORD, csrf: undefined });
      expect(res.status).toBe(403);
      expect(sessionCookie(res)).toBeUndefined();
      expect(res.headers.location).toBeUndefined();
    });

    it("refuses a POST whose csrf token does not match the browser's with 403", async () => {
      const user = await t.createUser();
      const browser = new Browser(t);
      const page = await browser.get('/login');
      const wrong = await browser.submit(page, { email: user.email, password: TEST_PASSWORD, csrf: 'x'.repeat(32) });
      expect(wrong.status).toBe(403);
      // A token lifted from the page but sent from another browser (without the cookie) is refused too.
      const elsewhere = await new Browser(t).submit(page, { email: user.email, password: TEST_PASSWORD });
      expect(elsewhere.status).toBe(403);
      expect(sessionCookie(elsewhere)).toBeUndefined();
    });
  });

  describe('password hashes', () => {
    /** The parameters of a PHC-format argon2id hash (16-byte salt, 32-byte hash), sorted: the format leaves their order open. */
    const parametersOf = (hash: string) => {
      const phc = /^\$argon2id\$v=19\$([^$]+)\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/.exec(hash);
      return phc ? phc[1].split(',').sort() : hash;
    };
    /** OWASP's argon2id set of 12 MiB, 3 passes, 1 lane. */
    const TODAY = ['m=12288', 'p=1', 't=3'];
    const storedHash = async (id: string) =>
      (
        await t.app
          .get(DataSource)
          .getRepository(User)
          .findOneOrFail({ where: { id }, select: { id: true, passwordHash: true } })
      ).passwordHash;
    const setHash = (id: string, passwordHash: string) => t.app.get(DataSource).getRepository(User).update({ id }, { passwordHash });

    it('stores a new password as argon2id with 12 MiB, 3 passes and 1 lane, salted per user', async () => {
      const [a, b] = [await t.createUser(), await t.createUser()];
      const [hashA, hashB] = [await storedHash(a.id), await storedHash(b.id)];
      expect(parametersOf(hashA)).toEqual(TODAY);
      expect(parametersOf(hashB)).toEqual(TODAY);
      expect(hashA).not.toBe(hashB);
      expect(hashA).not.toContain(TEST_PASSWORD);
    });

    it("replaces a hash made with an earlier release's parameters (19 MiB, 2 passes) at the next sign-in, not at a failed one", async () => {
      const user = await t.createUser();
      const earlier = await argon2.hash(TEST_PASSWORD, { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 });
      expect(parametersOf(earlier)).toEqual(['m=19456', 'p=1', 't=2']);
      await setHash(user.id, earlier);

      expect((await login(new Browser(t), user.email, 'not the password')).status).toBe(401);
      expect(await storedHash(user.id)).toBe(earlier);

      expect((await login(new Browser(t), user.email)).status).toBe(303);
      const upgraded = await storedHash(user.id);
      expect(parametersOf(upgraded)).toEqual(TODAY);
      expect(await argon2.verify(upgraded, TEST_PASSWORD)).toBe(true);

      // The new hash is today's: signing in again keeps it, and still works.
      expect((await login(new Browser(t), user.email)).status).toBe(303);
      expect(await storedHash(user.id)).toBe(upgraded);
    });

    it('does not overwrite a password that changed since it was read (the replacement names the hash it replaces)', async () => {
      const user = await t.createUser();
      const current = await storedHash(user.id);
      const replaced = await t.app.get(UsersRepository).replacePasswordHash(user.id, '$argon2id$v=19$m=19456,t=2,p=1$stale', 'x');
      expect(replaced).toBe(false);
      expect(await storedHash(user.id)).toBe(current);
    });
  });

  describe('POST /logout', () => {
    it('ends the session: the next /authorize goes to the login page, also with the old cookie', async () => {
      const client = await registerClient(t, { trusted: true });
      const { browser } = await signedIn(t);
      const path = authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI });
      expect(redirectParams(await browser.get(path)).get('code')).toBeTruthy();
      const oldCookie = browser.cookies.get(SESSION_COOKIE)!;

      // Another site's form (no token, or a wrong one) signs nobody out.
      for (const forged of [{}, { csrf: 'x'.repeat(32) }]) {
        const refused = await browser.post('/logout', forged);
        expect(refused.status).toBe(403);
        expect(refused.headers['set-cookie']).toBeUndefined();
        expect(redirectParams(await browser.get(path)).get('code')).toBeTruthy();
      }

      const res = await browser.post('/logout', { csrf: logoutToken((await browser.get('/account/apps')).text) });
      expect(res.status).toBe(303);
      const cleared = sessionCookie(res);
      expect(cleared).toBeDefined();
      expect(cleared!.startsWith(`${SESSION_COOKIE}=;`)).toBe(true);
      expect(cookieAttributes(cleared!)).toContain('expires=thu, 01 jan 1970 00:00:00 gmt');

      const after = await browser.get(path);
      expect(after.status).toBe(302);
      expect(after.headers.location).toMatch(/^\/login\?return_to=/);

      // The session is gone on the server, not only from the browser.
      const replay = new Browser(t);
      replay.cookies.set(SESSION_COOKIE, oldCookie);
      expect((await replay.get(path)).headers.location).toMatch(/^\/login\?return_to=/);
    });
  });
});

describe('login session with an https ISSUER', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, ISSUER: 'https://auth.example.com' });
  });
  afterAll(() => t.close());

  it('names every cookie __Host- (no subdomain can set or shadow it) and marks it Secure, HttpOnly, SameSite=Lax, Path=/', async () => {
    const user = await t.createUser();
    const browser = new Browser(t);
    const page = await browser.get('/login');
    const csrfCookie = setCookies(page).find((c) => c.startsWith('__Host-login_csrf='));
    expect(cookieAttributes(csrfCookie!)).toEqual(['path=/', 'httponly', 'secure', 'samesite=lax']);
    const res = await browser.submit(page, { email: user.email, password: TEST_PASSWORD });
    expect(res.status).toBe(303);
    const session = setCookies(res).find((c) => c.startsWith(`__Host-${SESSION_COOKIE}=`));
    const attrs = cookieAttributes(session!);
    expect(attrs).toContain('secure');
    expect(attrs).toContain('httponly');
    expect(attrs).toContain('samesite=lax');
    expect(attrs).toContain('path=/');
    expect(attrs.some((a) => a.startsWith('domain='))).toBe(false);
    expect(setCookies(res).some((c) => c.startsWith(`${SESSION_COOKIE}=`))).toBe(false);
    // A cookie without the prefix (set by a sibling host, say) is not read as the session.
    const tossed = new Browser(t);
    tossed.cookies.set(SESSION_COOKIE, browser.cookies.get(`__Host-${SESSION_COOKIE}`)!);
    expect((await tossed.get('/account/apps')).status).toBe(302);
    expect((await browser.get('/account/apps')).status).toBe(200);
  });
});

describe('login session with SESSION_TTL=1', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, SESSION_TTL: '1' });
  });
  afterAll(() => t.close());

  it('sends an expired session to the login page', async () => {
    const client = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const path = authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI });
    expect(redirectParams(await browser.get(path)).get('code')).toBeTruthy();
    await sleep(1200);
    // The browser keeps sending the cookie (as one with a slow clock would): the server must refuse it.
    const grants = t.app.get(DataSource).getRepository(Grant);
    const before = await grants.countBy({ clientId: client.client_id });
    const res = await browser.get(path);
    expect(res.status).toBe(302);
    expect(res.headers.location).toMatch(/^\/login\?return_to=/);
    // ... and write nothing for it (on PostgreSQL the session check and the writes are one statement).
    expect(await grants.countBy({ clientId: client.client_id })).toBe(before);
  });
});
