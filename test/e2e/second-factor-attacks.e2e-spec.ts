import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, NO_RATE_LIMITS, login, parseForm, signedIn, expectPage, auditEventsOf } from '../support/oauth';
import { type TestApp, createTestApp, createTestDatabase } from '../support/test-app';

const PAGE = '/account/security';
const KEY_ENCRYPTION_KEY = randomBytes(32).toString('base64');
const RECOVERY_CODE = /<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/code><\/li>/g;
const WRONG_CODE = 'The code is not correct, or it was used already.';
const LOCKED = 'Too many wrong codes: codes from your app are refused for 15 minutes. A recovery code still works.';
const LOCKED_FOR_GOOD = 'Too many wrong codes: codes from your app are refused until you sign in with a recovery code.';

/** The code an authenticator app shows for `secret`, `steps` periods of 30 s from now (RFC 6238, SHA-1, 6 digits). */
function codeOf(secret: string, steps = 0): string {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return totp.generate({ timestamp: Date.now() + steps * 30_000 });
}

/** Six-digit codes that are none of the codes around now (so none can match by chance), `n` different ones. */
function wrongCodes(secret: string, n: number): string[] {
  const near = new Set([-1, 0, 1, 2].map((s) => codeOf(secret, s)));
  const codes: string[] = [];
  for (let i = 0; codes.length < n; i++) {
    const code = String(i).padStart(6, '0');
    if (!near.has(code)) codes.push(code);
  }
  return codes;
}

const keyOf = (page: Response) => /Key: <code>([A-Z2-7]+)<\/code>/.exec(page.text)![1];
const recoveryCodesOf = (page: Response) => [...page.text.matchAll(RECOVERY_CODE)].map((m) => m[1]);

describe('second factor: what an attacker who has the password tries', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { ...NO_RATE_LIMITS, KEY_ENCRYPTION_KEY, MFA_REQUIRED_ROLES: 'admin' };
    a = await createTestApp(env, db);
    b = await createTestApp(env, db);
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await db.drop();
  });

  const events = (type: string, userId: string) => auditEventsOf(a, type, userId);

  /** A person who set up an authenticator on the account page: its key and their recovery codes. */
  async function enrolled() {
    const { user, browser } = await signedIn(a);
    const begun = await browser.submit(await browser.get(PAGE));
    const secret = keyOf(begun);
    const confirmed = await browser.submit(begun, { code: codeOf(secret) });
    expectPage(confirmed, 200);
    return { user, secret, codes: recoveryCodesOf(confirmed) };
  }

  /** A password sign-in in a new browser, on `t`: the browser and the code form. */
  async function passwordStep(t: TestApp, email: string) {
    const browser = new Browser(t);
    const res = await login(browser, email);
    expectPage(res, 200);
    expect(parseForm(res.text).action).toBe('/login/code');
    return { browser, csrf: parseForm(res.text).hidden.csrf };
  }

  /** `codes` typed into `/login/code`, five per password sign-in (the tries of one), on `t`, one after another. */
  async function typed(t: TestApp, email: string, codes: string[]): Promise<Response[]> {
    const answers: Response[] = [];
    for (let i = 0; i < codes.length; i += 5) {
      const { browser, csrf } = await passwordStep(t, email);
      for (const code of codes.slice(i, i + 5)) answers.push(await browser.post('/login/code', { csrf, code }));
    }
    return answers;
  }

  it('MFA_REQUIRED_ROLES: the secret shown to a password holder is not the one the person enrols later', async () => {
    const admin = await a.createUser({ role: 'admin' });
    // The attacker signs in with the password first and notes the key shown.
    const attacker = new Browser(a);
    const seen = await login(attacker, admin.email);
    expectPage(seen, 200);
    expect(parseForm(seen.text).action).toBe('/login/enrol');
    const attackersKey = keyOf(seen);

    // The person signs in later, on the other instance: a key of their own, bound to their sign-in.
    const person = new Browser(b);
    const asked = await login(person, admin.email);
    expectPage(asked, 200);
    const personsKey = keyOf(asked);
    expect(personsKey).not.toBe(attackersKey);
    // A wrong code shows the same sign-in's key again, never the attacker's.
    const wrong = await person.submit(asked, { code: wrongCodes(personsKey, 1)[0] });
    expectPage(wrong, 400);
    expect(keyOf(wrong)).toBe(personsKey);
    const done = await person.submit(wrong, { code: codeOf(personsKey) });
    expectPage(done, 200);
    expect(person.cookies.has('oauth_session')).toBe(true);

    // The attacker's key opens nothing: neither their waiting sign-in nor a new one.
    const late = await attacker.submit(seen, { code: codeOf(attackersKey) });
    expectPage(late, 401);
    expect(late.text).toContain('This sign-in has expired or had too many wrong codes.');
    expect(attacker.cookies.has('oauth_session')).toBe(false);
    const again = await login(new Browser(a), admin.email);
    expect(parseForm(again.text).action).toBe('/login/code');
    expect(again.text).not.toContain(attackersKey);
    expect(again.text).not.toContain(personsKey);
    expect((await events('factor.enrolled', admin.id)).map((e) => e.details)).toEqual([{ factor: 'totp' }]);
  });

  it("MFA_REQUIRED_ROLES: an abandoned sign-in's key is not shown at the next one", async () => {
    const admin = await a.createUser({ role: 'admin' });
    const first = new Browser(a);
    const firstKey = keyOf(await login(first, admin.email));
    // The sign-in is abandoned; the next one, from anyone with the password, gets a new key.
    const second = await login(new Browser(b), admin.email);
    expect(keyOf(second)).not.toBe(firstKey);
    expect(second.text).not.toContain(firstKey);
  });

  it('counts parallel guesses before trying them: of 20 codes sent at once, 10 are tried and the rest refused as locked', async () => {
    const { user, secret } = await enrolled();
    const codes = wrongCodes(secret, 20);
    // Four waiting sign-ins (five tries each), on both instances, every code sent at the same moment.
    const signIns = await Promise.all([a, b, a, b].map((t) => passwordStep(t, user.email)));
    const answers = await Promise.all(
      codes.map((code, i) => signIns[Math.floor(i / 5)].browser.post('/login/code', { csrf: signIns[Math.floor(i / 5)].csrf, code })),
    );
    for (const answer of answers) expectPage(answer, 401);
    expect(answers.filter((res) => res.text.includes(WRONG_CODE))).toHaveLength(10);
    expect(answers.filter((res) => res.text.includes(LOCKED))).toHaveLength(10);
    expect((await events('login.failed', user.id)).filter((e) => e.details?.reason === 'wrong second factor')).toHaveLength(10);
  });

  it('takes a recovery code while the authenticator is locked: a password holder cannot lock the person out', async () => {
    const { user, secret, codes } = await enrolled();
    for (const res of await typed(a, user.email, wrongCodes(secret, 10))) expect(res.text).toContain(WRONG_CODE);
    const { browser, csrf } = await passwordStep(b, user.email);
    const refused = await browser.post('/login/code', { csrf, code: codeOf(secret, 1) });
    expectPage(refused, 401);
    expect(refused.text).toContain(LOCKED);
    const signed = await browser.post('/login/code', { csrf, code: codes[0] });
    expect(signed.status, signed.text.slice(0, 400)).toBe(303);
    expect(browser.cookies.has('oauth_session')).toBe(true);
    // The recovery code ended the lock: the app's codes work again.
    const next = await passwordStep(a, user.email);
    expect((await next.browser.post('/login/code', { csrf: next.csrf, code: codeOf(secret, 1) })).status).toBe(303);
  });

  it('stops after five locks in a row (50 wrong codes): the authenticator stays locked until a recovery code is used', async () => {
    const { user, secret, codes } = await enrolled();
    const dataSource = a.app.get(DataSource);
    const guesses = wrongCodes(secret, 50);
    for (let lock = 0; lock < 5; lock++) {
      const answers = await typed(lock % 2 ? b : a, user.email, guesses.slice(lock * 10, lock * 10 + 10));
      for (const res of answers) expect(res.text).toContain(WRONG_CODE);
      // The 15 minutes pass (moved into the past here).
      await dataSource.query(`UPDATE totp_factors SET locked_until = 1 WHERE user_id = '${user.id}'`);
    }
    const { browser, csrf } = await passwordStep(a, user.email);
    const refused = await browser.post('/login/code', { csrf, code: codeOf(secret, 1) });
    expectPage(refused, 401);
    expect(refused.text).toContain(LOCKED_FOR_GOOD);
    expect(browser.cookies.has('oauth_session')).toBe(false);
    expect((await events('login.failed', user.id)).map((e) => e.details)).toContainEqual({ reason: 'second factor locked' });

    const recovered = await browser.post('/login/code', { csrf, code: codes[1].toUpperCase() });
    expect(recovered.status, recovered.text.slice(0, 400)).toBe(303);
    const next = await passwordStep(b, user.email);
    expect((await next.browser.post('/login/code', { csrf: next.csrf, code: codeOf(secret, 1) })).status).toBe(303);
  });

  it('issues recovery codes of 80 bits and keeps only a keyed hash of them', async () => {
    const { user, codes } = await enrolled();
    expect(codes).toHaveLength(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/);
    const rows = (await a.app.get(DataSource).query(`SELECT code_hash FROM recovery_codes WHERE user_id = '${user.id}'`)) as {
      code_hash: string;
    }[];
    expect(rows).toHaveLength(10);
    // Not the plain SHA-256 of a code: a stolen table cannot be checked against guesses without the server's key.
    const unkeyed = new Set(codes.map((code) => createHash('sha256').update(code).digest('hex')));
    for (const { code_hash } of rows) {
      expect(unkeyed.has(code_hash)).toBe(false);
      expect(codes).not.toContain(code_hash);
    }
  });

  it('keeps recovery codes issued before (ten characters, plain SHA-256): keyed at the next start, and each still works once', async () => {
    const { user, secret } = await enrolled();
    const legacy = 'abcde-fghij';
    const dataSource = a.app.get(DataSource);
    const legacyHash = createHash('sha256').update(legacy).digest('hex');
    await dataSource.query(
      `INSERT INTO recovery_codes (code_hash, user_id, created_at, used_at) VALUES ('${legacyHash}', '${user.id}', 1, NULL)`,
    );
    // An instance starting (a new release) keys the old hashes.
    const c = await createTestApp({ ...NO_RATE_LIMITS, KEY_ENCRYPTION_KEY, MFA_REQUIRED_ROLES: 'admin' }, db);
    try {
      const stored = (await dataSource.query(`SELECT code_hash FROM recovery_codes WHERE user_id = '${user.id}'`)) as {
        code_hash: string;
      }[];
      expect(stored.map((row) => row.code_hash)).not.toContain(legacyHash);
      const { browser, csrf } = await passwordStep(c, user.email);
      expect((await browser.post('/login/code', { csrf, code: 'ABCDEFGHIJ' })).status).toBe(303);
      const again = await passwordStep(a, user.email);
      expectPage(await again.browser.post('/login/code', { csrf: again.csrf, code: legacy }), 401);
      expect(secret).toHaveLength(32);
    } finally {
      await c.close();
    }
  });
});
