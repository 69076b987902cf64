import { randomUUID } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { TokenIssuer } from '../../src/oauth/grants/token-issuer.service';
import {
  Browser,
  NO_RATE_LIMITS,
  decodeJwt,
  login,
  openIdTokens,
  parseForms,
  signedIn,
  expectPage,
  formOf,
  auditEventsOf,
} from '../support/oauth';
import { type CredentialJson, SoftAuthenticator } from '../support/passkey-authenticator.mjs';
import { type TestApp, bearer, createTwoInstances } from '../support/test-app';

const PAGE = '/account/security';

describe('passkeys (WebAuthn): register on the account page, sign in with one alone or after the password', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;
  let origin: string;

  beforeAll(async () => {
    ({ a, b, close } = await createTwoInstances({ ...NO_RATE_LIMITS }));
    origin = new URL(a.config.issuer).origin;
  });
  afterAll(() => close());

  const events = (type: string, userId: string) => auditEventsOf(a, type, userId);

  /** A signed-in person who added a passkey on the account page (through instance `t`). */
  async function registered(t: TestApp = a, overrides: Parameters<TestApp['createUser']>[0] = {}, name = 'Work laptop') {
    const { user, browser } = await signedIn(t, overrides);
    const authenticator = new SoftAuthenticator();
    const res = await addPasskey(browser, authenticator, name);
    expect(res.status, res.text.slice(0, 600)).toBe(303);
    expect(res.headers.location).toBe(PAGE);
    return { user, browser, authenticator };
  }

  async function addPasskey(browser: Browser, authenticator: SoftAuthenticator, name: string, opts = {}): Promise<Response> {
    const page = await browser.get(PAGE);
    const form = formOf(page, '/account/security/passkeys');
    const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
    expect(options.status, JSON.stringify(options.body)).toBe(200);
    const answer = authenticator.register(options.body, { origin, ...opts });
    return browser.post('/account/security/passkeys', { ...form, name, response: JSON.stringify(answer) });
  }

  /** The login page in a new browser, and the challenge for a passkey sign-in (step `sign-in`). */
  async function passkeyChallenge(t: TestApp, returnTo = '/account/apps') {
    const browser = new Browser(t);
    const page = await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`);
    expectPage(page, 200);
    const form = formOf(page, '/login/passkey');
    const options = await browser.postJson('/login/passkey/options', { csrf: form.csrf, step: 'sign-in' });
    expect(options.status, JSON.stringify(options.body)).toBe(200);
    return { browser, form, options: options.body as { challenge: string; rpId: string; allowCredentials: unknown[] } };
  }

  const postAnswer = (browser: Browser, form: Record<string, string>, answer: CredentialJson | string) =>
    browser.post('/login/passkey', { ...form, response: typeof answer === 'string' ? answer : JSON.stringify(answer) });

  const CONFIRM_FIRST = 'To change how you sign in, first confirm it is you with your authenticator or a passkey.';

  /** The step-up the account page links to: the person confirms it is them with their passkey (session aal2 or more). */
  async function confirmIt(browser: Browser, authenticator: SoftAuthenticator) {
    const page = await browser.get('/login/step-up?return_to=%2Faccount%2Fsecurity&acr=aal2');
    expectPage(page, 200);
    const form = formOf(page, '/login/passkey');
    const options = await browser.postJson('/login/passkey/options', { csrf: form.csrf, step: 'second-factor' });
    const res = await postAnswer(browser, form, authenticator.authenticate(options.body, { origin }));
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(PAGE);
  }

  it('hands out creation options for a discoverable passkey with user verification, the challenge bound to the browser', async () => {
    const { user, browser } = await signedIn(a);
    const page = await browser.get(PAGE);
    expectPage(page, 200);
    expect(page.text).toContain('<script src="/assets/webauthn.js"></script><script src="/assets/passkeys.js"></script>');
    const form = formOf(page, '/account/security/passkeys');
    const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
    expect(options.status).toBe(200);
    expect(options.headers['cache-control']).toBe('no-store');
    expect(options.body).toMatchObject({
      rp: { id: 'localhost', name: 'localhost' },
      user: { id: Buffer.from(user.id).toString('base64url'), name: user.email },
      attestation: 'none',
      excludeCredentials: [],
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
    });
    expect(options.body.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = ([] as string[]).concat(options.headers['set-cookie'] ?? []).find((c) => c.startsWith('webauthn_challenge='));
    expect(cookie).toMatch(/; Max-Age=300; Path=\/; Expires=[^;]+ GMT; HttpOnly; SameSite=Lax$/);
    // Only the cookie names the challenge: the table keeps its hash, not the cookie's value.
    const rows = (await a.app.get(DataSource).query(`SELECT id FROM webauthn_challenges WHERE user_id = '${user.id}'`)) as { id: string }[];
    expect(rows).toHaveLength(1);
    expect(cookie).not.toContain(rows[0].id);
  });

  it('registers a passkey: listed with its name, audited, stored as a public key; a second one excludes the first', async () => {
    const { user, browser, authenticator } = await registered();
    const page = await browser.get(PAGE);
    expectPage(page, 200);
    expect(page.text).toContain('<h3>Work laptop</h3>');
    expect(page.text).toContain('on one device');
    expect((await events('factor.enrolled', user.id)).map((e) => e.details)).toEqual([
      { factor: 'passkey', passkey: 'Work laptop', synced: false },
    ]);
    const [row] = (await a.app
      .get(DataSource)
      .query(`SELECT id, public_key, sign_count, device_type FROM passkeys WHERE user_id = '${user.id}'`)) as {
      id: string;
      public_key: string;
      sign_count: unknown;
      device_type: string;
    }[];
    expect(row).toMatchObject({ id: authenticator.id, device_type: 'singleDevice' });
    expect(Number(row.sign_count)).toBe(0);
    // The session is a password one and the person now has a passkey: whoever holds the cookie must show it first.
    const form = formOf(page, '/account/security/passkeys');
    expect(page.text).toContain('<a href="/login/step-up?return_to=%2Faccount%2Fsecurity&amp;acr=aal2">Confirm it is you</a>');
    const refused = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ status: 403, detail: CONFIRM_FIRST });
    const refusedAdd = await browser.post('/account/security/passkeys', { ...form, response: '{}' });
    expectPage(refusedAdd, 403);
    expect(refusedAdd.text).toContain(CONFIRM_FIRST);
    await confirmIt(browser, authenticator);
    // The creation options of a second passkey name the first, so the same authenticator is not registered twice.
    // (The renewed session has a new CSRF token: the page again.)
    const renewed = formOf(await browser.get(PAGE), '/account/security/passkeys');
    const options = await browser.postJson('/account/security/passkeys/options', { csrf: renewed.csrf });
    expect(options.body.excludeCredentials).toEqual([{ id: authenticator.id, type: 'public-key', transports: ['internal'] }]);
    const synced = new SoftAuthenticator();
    const second = await browser.post('/account/security/passkeys', {
      ...renewed,
      name: '',
      response: JSON.stringify(synced.register(options.body, { origin, synced: true })),
    });
    expect(second.status).toBe(303);
    const after = await browser.get(PAGE);
    expect(after.text).toContain('<h3>Passkey</h3>');
    expect(after.text).toContain('synced between your devices');
  });

  it('refuses a registration from another origin, for another relying party, without user verification, or replayed', async () => {
    const { user, browser } = await signedIn(a);
    for (const opts of [{ origin: 'https://evil.example' }, { rpId: 'evil.example' }, { userVerified: false }]) {
      const refused = await addPasskey(browser, new SoftAuthenticator(), 'Key', opts);
      expectPage(refused, 400);
      expect(refused.text).toContain('The passkey could not be added. Try again.');
    }
    // What the browser adds unchecked by the library: transports that are not a list, a credential id past
    // WebAuthn's 1,023 bytes. A 400, never a 500.
    for (const [authenticator, tamper] of [
      [new SoftAuthenticator(1100), () => undefined],
      [new SoftAuthenticator(), (answer: CredentialJson) => Object.assign(answer.response, { transports: 'usb' })],
    ] as const) {
      const page = await browser.get(PAGE);
      const form = formOf(page, '/account/security/passkeys');
      const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
      const answer = authenticator.register(options.body, { origin });
      tamper(answer);
      const res = await browser.post('/account/security/passkeys', { ...form, response: JSON.stringify(answer) });
      if (authenticator.credentialId.length > 1023) expectPage(res, 400);
      else expect(res.status).toBe(303);
    }
    expect((await a.app.get(DataSource).query(`SELECT transports FROM passkeys WHERE user_id = '${user.id}'`)) as unknown[]).toEqual([
      { transports: '' },
    ]);
    await a.app.get(DataSource).query(`DELETE FROM passkeys WHERE user_id = '${user.id}'`);
    // The same answer again: its challenge was taken by the first post.
    const authenticator = new SoftAuthenticator();
    const page = await browser.get(PAGE);
    const form = formOf(page, '/account/security/passkeys');
    const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
    const answer = JSON.stringify(authenticator.register(options.body, { origin }));
    expect((await browser.post('/account/security/passkeys', { ...form, response: answer })).status).toBe(303);
    // Replayed by a session that showed the passkey (else it is refused before the answer is read).
    await confirmIt(browser, authenticator);
    const renewed = formOf(await browser.get(PAGE), '/account/security/passkeys');
    expectPage(await browser.post('/account/security/passkeys', { ...renewed, response: answer }), 400);
    expect((await a.app.get(DataSource).query(`SELECT id FROM passkeys WHERE user_id = '${user.id}'`)) as unknown[]).toHaveLength(1);
  });

  it('signs in with a passkey alone, no email typed: the session starts, amr ["hwk", "user", "mfa"] in the tokens', async () => {
    const { user, authenticator } = await registered();
    const { browser, form, options } = await passkeyChallenge(a);
    expect(options).toMatchObject({ rpId: 'localhost', userVerification: 'required', allowCredentials: [] });
    const res = await postAnswer(browser, form, authenticator.authenticate(options, { origin }));
    expect(res.status, res.text.slice(0, 400)).toBe(303);
    expect(res.headers.location).toBe('/account/apps');
    expect(browser.cookies.has('oauth_session')).toBe(true);
    expect(browser.cookies.has('webauthn_challenge')).toBe(false);
    expect((await browser.get('/account/apps')).status).toBe(200);

    const issued = await openIdTokens(a, browser);
    expect(decodeJwt(issued.body.id_token).payload).toMatchObject({ sub: user.id, amr: ['hwk', 'user', 'mfa'] });
    expect(decodeJwt(issued.body.access_token).payload.amr).toEqual(['hwk', 'user', 'mfa']);
    // The sign counter and the time of use are kept.
    const [row] = (await a.app.get(DataSource).query(`SELECT sign_count, last_used_at FROM passkeys WHERE id = '${authenticator.id}'`)) as {
      sign_count: unknown;
      last_used_at: unknown;
    }[];
    expect(Number(row.sign_count)).toBe(1);
    expect(row.last_used_at).not.toBeNull();
  });

  it('takes a challenge handed out by one instance at the other, once: the replayed assertion is refused and audited', async () => {
    const { user, authenticator } = await registered(a);
    const { browser, form, options } = await passkeyChallenge(a);
    const answer = authenticator.authenticate(options, { origin });
    // The browser's next request reaches instance b.
    const atB = new Browser(b);
    for (const [k, v] of browser.cookies) atB.cookies.set(k, v);
    const first = await postAnswer(atB, form, answer);
    expect(first.status).toBe(303);
    // A copy of the answer and of the cookies, posted again: the challenge is gone.
    const thief = new Browser(a);
    for (const [k, v] of browser.cookies) if (k !== 'oauth_session') thief.cookies.set(k, v);
    const replayed = await postAnswer(thief, form, answer);
    expectPage(replayed, 401);
    expect(replayed.text).toContain('That passkey could not be used to sign in.');
    expect(thief.cookies.has('oauth_session')).toBe(false);
    // With a fresh challenge of its own, the old answer signs the wrong one.
    const fresh = await passkeyChallenge(a);
    expectPage(await postAnswer(fresh.browser, fresh.form, answer), 401);
    const reasons = (await events('login.failed', user.id)).map((e) => e.details);
    expect(reasons).toEqual(expect.arrayContaining([{ reason: 'passkey: not verified' }]));
    const anonymous = (
      await a.app.get(AuditService).list(Object.assign(new AuditEventsQueryDto(), { type: 'login.failed', limit: 100, offset: 0 }))
    ).data;
    expect(anonymous.some((e) => (e.details as { reason?: string }).reason === 'passkey: no challenge')).toBe(true);
  });

  it("refuses an answer to another browser's challenge: each browser's cookie names its own", async () => {
    const { authenticator } = await registered();
    const victim = await passkeyChallenge(a);
    const attacker = await passkeyChallenge(a);
    // The attacker has the victim's authenticator sign the attacker's challenge... and posts it in the victim's browser.
    const answer = authenticator.authenticate(attacker.options, { origin });
    expectPage(await postAnswer(victim.browser, victim.form, answer), 401);
    expect(victim.browser.cookies.has('oauth_session')).toBe(false);
    // And an answer over the victim's challenge, posted without the victim's cookie.
    const stolen = authenticator.authenticate(victim.options, { origin });
    expectPage(await postAnswer(attacker.browser, attacker.form, stolen), 401);
    expect(attacker.browser.cookies.has('oauth_session')).toBe(false);
  });

  it('refuses an assertion from another origin, for another relying party, without user verification, or with a counter gone back', async () => {
    const { user, authenticator } = await registered();
    for (const opts of [{ origin: 'https://evil.example' }, { rpId: 'evil.example' }, { origin, userVerified: false }]) {
      const { browser, form, options } = await passkeyChallenge(a);
      const res = await postAnswer(browser, form, authenticator.authenticate(options, opts));
      expectPage(res, 401);
      expect(browser.cookies.has('oauth_session')).toBe(false);
    }
    // A cloned authenticator: its counter is behind the one the service saw last.
    const ok = await passkeyChallenge(a);
    authenticator.signCount = 10;
    expect((await postAnswer(ok.browser, ok.form, authenticator.authenticate(ok.options, { origin }))).status).toBe(303);
    const clone = await passkeyChallenge(a);
    authenticator.signCount = 3;
    expectPage(await postAnswer(clone.browser, clone.form, authenticator.authenticate(clone.options, { origin })), 401);
    const reasons = (await events('login.failed', user.id)).map((e) => e.details);
    expect(reasons).toEqual(Array(4).fill({ reason: 'passkey: not verified' }));
  });

  it('refuses a passkey sign-in without a user handle (WebAuthn 7.2: nobody was named before the ceremony)', async () => {
    const { authenticator } = await registered();
    const { browser, form, options } = await passkeyChallenge(a);
    const answer = authenticator.authenticate(options, { origin });
    const res = await postAnswer(browser, form, { ...answer, response: { ...answer.response, userHandle: '' } });
    expectPage(res, 401);
    expect(res.text).toContain('That passkey could not be used to sign in.');
    expect(browser.cookies.has('oauth_session')).toBe(false);
  });

  it('refuses an unknown passkey, and a body that is not an answer, with the login page (never a 500)', async () => {
    const { browser, form, options } = await passkeyChallenge(a);
    expectPage(await postAnswer(browser, form, new SoftAuthenticator().authenticate(options, { origin })), 401);
    for (const junk of [
      '',
      'not json',
      '{"id":"x"}',
      JSON.stringify({ id: 'a', rawId: 'a', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: '!!' } }),
    ]) {
      const again = await passkeyChallenge(a);
      const res = await postAnswer(again.browser, again.form, junk);
      expectPage(res, 401);
      expect(res.text).toContain('That passkey could not be used to sign in.');
    }
  });

  it('answers the options endpoints with problems: 403 without the CSRF token or a session, 400 for an unknown step', async () => {
    const browser = new Browser(a);
    const page = await browser.get('/login');
    const form = formOf(page, '/login/passkey');
    const forged = await browser.postJson('/login/passkey/options', { csrf: 'x'.repeat(32), step: 'sign-in' });
    expect(forged.status).toBe(403);
    expect(forged.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(forged.body).toMatchObject({ status: 403, detail: 'The form has expired: load the sign-in page again.' });
    const step = await browser.postJson('/login/passkey/options', { csrf: form.csrf, step: 'register' });
    expect(step.status).toBe(400);
    expect(step.body).toMatchObject({ status: 400, detail: 'step must be sign-in, second-factor or reauth.' });
    // The second-factor step needs a sign-in whose password matched.
    const early = await browser.postJson('/login/passkey/options', { csrf: form.csrf, step: 'second-factor' });
    expect(early.status).toBe(401);
    const noSession = await new Browser(a).postJson('/account/security/passkeys/options', { csrf: form.csrf });
    expect(noSession.status).toBe(403);
    expect(noSession.body).toMatchObject({ status: 403 });
  });

  it('asks for a passkey after the password of a person who has one: amr ["pwd", "hwk", "user", "mfa"]; not another person\'s passkey', async () => {
    const { user, authenticator } = await registered();
    const other = await registered();
    const browser = new Browser(a);
    const res = await login(browser, user.email, undefined, '/account/apps');
    expectPage(res, 200);
    expect(res.text).toContain('<h1>Use your passkey</h1>');
    expect(parseForms(res.text).map((f) => f.action)).toEqual(['/login/passkey']);
    expect(browser.cookies.has('oauth_session')).toBe(false);
    const form = formOf(res, '/login/passkey');
    expect(form.step).toBe('second-factor');

    const askOptions = async () => {
      const options = await browser.postJson('/login/passkey/options', { csrf: form.csrf, step: 'second-factor' });
      expect(options.status).toBe(200);
      return options.body as { challenge: string; rpId: string; allowCredentials: { id: string }[] };
    };
    const first = await askOptions();
    expect(first.allowCredentials.map((c) => c.id)).toEqual([authenticator.id]);
    const wrongPerson = await postAnswer(browser, form, other.authenticator.authenticate(first, { origin }));
    expectPage(wrongPerson, 401);
    expect(wrongPerson.text).toContain('<h1>Use your passkey</h1>');
    expect((await events('login.failed', user.id)).map((e) => e.details)).toEqual([{ reason: 'passkey: passkey of another person' }]);

    const signedInRes = await postAnswer(browser, form, authenticator.authenticate(await askOptions(), { origin }));
    expect(signedInRes.status).toBe(303);
    expect(signedInRes.headers.location).toBe('/account/apps');
    expect(browser.cookies.has('login_challenge')).toBe(false);
    const issued = await openIdTokens(a, browser);
    expect(decodeJwt(issued.body.id_token).payload.amr).toEqual(['pwd', 'hwk', 'user', 'mfa']);
  });

  it("renames and removes a passkey; not another person's (404); the last one of a role that needs a second factor stays (409)", async () => {
    const { user, browser, authenticator } = await registered();
    const page = await browser.get(PAGE);
    const rename = formOf(page, '/account/security/passkeys/rename');
    expect(rename.id).toBe(authenticator.id);
    const renamed = await browser.post('/account/security/passkeys/rename', { ...rename, name: 'Phone' });
    expect(renamed.status).toBe(303);
    expect((await browser.get(PAGE)).text).toContain('<h3>Phone</h3>');
    expectPage(await browser.post('/account/security/passkeys/rename', { ...rename, name: 'a\u0007b' }), 400);
    expectPage(await browser.post('/account/security/passkeys/rename', { ...rename, id: 'a\u0000b', name: 'Nul' }), 404);
    // Removing takes a session that showed a factor: this one is a password one.
    expectPage(await browser.post('/account/security/passkeys/remove', formOf(page, '/account/security/passkeys/remove')), 403);
    await confirmIt(browser, authenticator);
    const confirmed = await browser.get(PAGE);

    const other = await registered();
    const otherRemove = formOf(await other.browser.get(PAGE), '/account/security/passkeys/remove');
    const notMine = await browser.post('/account/security/passkeys/remove', {
      ...formOf(confirmed, '/account/security/passkeys/remove'),
      id: otherRemove.id,
    });
    expectPage(notMine, 404);
    expectPage(
      await browser.post('/account/security/passkeys/rename', {
        ...formOf(confirmed, '/account/security/passkeys/rename'),
        id: otherRemove.id,
        name: 'Mine now',
      }),
      404,
    );

    const removed = await browser.post('/account/security/passkeys/remove', formOf(confirmed, '/account/security/passkeys/remove'));
    expect(removed.status).toBe(303);
    expect((await browser.get(PAGE)).text).not.toContain('<h3>Phone</h3>');
    expect((await events('factor.removed', user.id)).map((e) => e.details)).toEqual([{ factor: 'passkey', passkey: 'Phone' }]);
    // Forged: no CSRF token of the session.
    expectPage(await browser.post('/account/security/passkeys/remove', { id: otherRemove.id, csrf: 'x'.repeat(43) }), 403);
  });

  it('keeps the last factor of a person whose role needs one: the authenticator goes once a passkey is there, the last passkey stays (409)', async () => {
    const { a: strict, close: closeStrict } = await createTwoInstances({ ...NO_RATE_LIMITS, MFA_REQUIRED_ROLES: 'admin' });
    try {
      const origin = new URL(strict.config.issuer).origin;
      const admin = await strict.createUser({ role: 'admin' });
      // Led to set up an authenticator at sign-in, then signed in.
      const browser = new Browser(strict);
      const enrol = await login(browser, admin.email);
      expectPage(enrol, 200);
      const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(enrol.text)![1];
      const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
      expect((await browser.submit(enrol, { code: totp.generate() })).status).toBe(200);
      // The only factor is the authenticator: it stays.
      const page = await browser.get(PAGE);
      const removeTotp = formOf(page, '/account/security/totp/remove');
      const kept = await browser.post('/account/security/totp/remove', {
        ...removeTotp,
        code: totp.generate({ timestamp: Date.now() + 30_000 }),
      });
      expectPage(kept, 409);
      expect(kept.text).toContain('add a passkey before you remove the authenticator');
      // With a passkey, the authenticator can go; the passkey, now the last factor, cannot.
      const form = formOf(page, '/account/security/passkeys');
      const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
      const authenticator = new SoftAuthenticator();
      const added = await browser.post('/account/security/passkeys', {
        ...form,
        response: JSON.stringify(authenticator.register(options.body, { origin })),
      });
      expect(added.status).toBe(303);
      const gone = await browser.post('/account/security/totp/remove', {
        ...removeTotp,
        code: totp.generate({ timestamp: Date.now() + 30_000 }),
      });
      expect(gone.status).toBe(303);
      const last = await browser.post(
        '/account/security/passkeys/remove',
        formOf(await browser.get(PAGE), '/account/security/passkeys/remove'),
      );
      expectPage(last, 409);
      expect(last.text).toContain('this passkey is your last one and stays');
      // And the administrator signs in with it alone.
      const again = new Browser(strict);
      const loginPage = await again.get('/login');
      const loginForm = formOf(loginPage, '/login/passkey');
      const request = await again.postJson('/login/passkey/options', { csrf: loginForm.csrf, step: 'sign-in' });
      const res = await postAnswer(again, loginForm, authenticator.authenticate(request.body, { origin }));
      expect(res.status).toBe(303);
      // After the password, the passkey is the second factor.
      const passwordFirst = await login(new Browser(strict), admin.email);
      expectPage(passwordFirst, 200);
      expect(passwordFirst.text).toContain('<h1>Use your passkey</h1>');
    } finally {
      await closeStrict();
    }
  });

  it('keeps the last factor when the authenticator and the last passkey are removed at the same moment (two tabs, two instances)', async () => {
    const strict = await createTwoInstances({ ...NO_RATE_LIMITS, MFA_REQUIRED_ROLES: 'admin' });
    try {
      const admin = await strict.a.createUser({ role: 'admin' });
      const operator = await strict.a.createUser({ role: 'admin' });
      const operatorToken = strict.a.app.get(TokenIssuer).mintAccessToken({
        sub: operator.id,
        clientId: 'test-client',
        scope: 'users:read users:write',
        grantId: randomUUID(),
        amr: ['pwd', 'otp', 'mfa'],
      }).token;
      const factorsOf = async () =>
        (
          await strict.a
            .http()
            .get(`/users/${admin.id}/factors`)
            .set(...bearer(operatorToken))
        ).body;
      // Signed in on both instances with the password and an authenticator; then a passkey added on the first.
      const tabs = [new Browser(strict.a), new Browser(strict.b)];
      const enrol = await login(tabs[0], admin.email);
      const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(enrol.text)![1];
      const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
      const enrolled = await tabs[0].submit(enrol, { code: totp.generate() });
      expect(enrolled.status).toBe(200);
      const recoveryCodes = [...enrolled.text.matchAll(/<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/code><\/li>/g)].map(
        (m) => m[1],
      );
      expect(recoveryCodes).toHaveLength(10);
      const second = await login(tabs[1], admin.email);
      expect((await tabs[1].submit(second, { code: recoveryCodes[0] })).status).toBe(303);
      const page = await tabs[0].get(PAGE);
      const form = formOf(page, '/account/security/passkeys');
      const options = await tabs[0].postJson('/account/security/passkeys/options', { csrf: form.csrf });
      const added = await tabs[0].post('/account/security/passkeys', {
        ...form,
        response: JSON.stringify(new SoftAuthenticator().register(options.body, { origin: new URL(strict.a.config.issuer).origin })),
      });
      expect(added.status).toBe(303);
      expect(await factorsOf()).toMatchObject({ totp: 'active', passkeys: [expect.any(Object)] });

      // The attack: each removal alone is allowed (the other factor stays); both at once must not leave neither.
      const totpForm = { ...formOf(await tabs[1].get(PAGE), '/account/security/totp/remove'), code: recoveryCodes[1] };
      const passkeyForm = formOf(await tabs[0].get(PAGE), '/account/security/passkeys/remove');
      const [removeTotp, removePasskey] = await Promise.all([
        tabs[1].post('/account/security/totp/remove', totpForm),
        tabs[0].post('/account/security/passkeys/remove', passkeyForm),
      ]);
      expect([removeTotp.status, removePasskey.status].sort()).toEqual([303, 409]);
      const left = await factorsOf();
      if (removeTotp.status === 303) {
        expect(left).toMatchObject({ totp: 'none', passkeys: [expect.any(Object)] });
        expect(removePasskey.text).toContain('this passkey is your last one and stays');
      } else {
        expect(left).toMatchObject({ totp: 'active', passkeys: [] });
        expect(removeTotp.text).toContain('add a passkey before you remove the authenticator');
      }
    } finally {
      await strict.close();
    }
  });

  it("lets an administrator see and reset a person's factors through the API (audited); the person signs in with the password alone again", async () => {
    const { user, authenticator } = await registered();
    const admin = await a.createUser({ role: 'admin' });
    // Resetting factors needs an administrator's token of a two-factor sign-in (acr aal2).
    const mint = (sub: string, scope: string, amr?: string[]) =>
      a.app.get(TokenIssuer).mintAccessToken({ sub, clientId: 'test-client', scope, grantId: randomUUID(), amr }).token;
    const adminToken = mint(admin.id, 'users:read users:write', ['pwd', 'otp', 'mfa']);
    const seen = await a
      .http()
      .get(`/users/${user.id}/factors`)
      .set(...bearer(adminToken));
    expect(seen.status, JSON.stringify(seen.body)).toBe(200);
    expect(seen.body).toEqual({
      userId: user.id,
      totp: 'none',
      recoveryCodesLeft: 0,
      passkeys: [{ id: authenticator.id, name: 'Work laptop', synced: false, createdAt: expect.any(String), lastUsedAt: null }],
    });
    // Not for a person's own token, even about themselves; not for a token without users:write.
    const own = await a.token(user.id, ['users:read', 'users:write']);
    expect(
      (
        await a
          .http()
          .get(`/users/${user.id}/factors`)
          .set(...bearer(own))
      ).status,
    ).toBe(403);
    expect(
      (
        await a
          .http()
          .delete(`/users/${user.id}/factors`)
          .set(...bearer(own))
      ).status,
    ).toBe(403);
    const readOnly = await a.token(admin.id, ['users:read']);
    expect(
      (
        await a
          .http()
          .delete(`/users/${user.id}/factors`)
          .set(...bearer(readOnly))
      ).status,
    ).toBe(403);
    const unknown = await a
      .http()
      .delete('/users/00000000-0000-4000-8000-000000000000/factors')
      .set(...bearer(adminToken));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ status: 404, detail: 'No such user.' });

    const reset = await a
      .http()
      .delete(`/users/${user.id}/factors`)
      .set(...bearer(adminToken));
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ userId: user.id, removed: { totp: false, passkeys: 1 } });
    const removed = await events('factor.removed', user.id);
    expect(removed.map((e) => [e.actor, e.details])).toEqual([[`user:${admin.id}`, { factor: 'passkey', count: 1 }]]);
    expect((await login(new Browser(a), user.email)).status).toBe(303);
    const { browser, form, options } = await passkeyChallenge(a);
    expectPage(await postAnswer(browser, form, authenticator.authenticate(options, { origin })), 401);
  });

  it('serves the browser part of SimpleWebAuthn and the passkey script from this origin', async () => {
    for (const path of ['/assets/webauthn.js', '/assets/passkeys.js']) {
      const res = await a.http().get(path);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    expect((await a.http().get('/assets/webauthn.js')).text).toContain('SimpleWebAuthnBrowser');
    expect((await a.http().get('/assets/passkeys.js')).text).toContain('form[data-passkey]');
  });
});
