import { Secret, TOTP } from 'otpauth';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BY_SYSTEM } from '../../src/audit/audit-events';
import { SignInFactorsService } from '../../src/mfa/sign-in-factors.service';
import {
  Browser,
  NO_RATE_LIMITS,
  expectOAuthError,
  issueTokens,
  login,
  registerClient,
  resourceStatus,
  signedIn,
  token,
  expectPage,
  formOf,
  auditEventsOf,
} from '../support/oauth';
import { SoftAuthenticator } from '../support/passkey-authenticator.mjs';
import { type TestApp, createTestApp } from '../support/test-app';

const PAGE = '/account/security';
const RECENT_PASSWORD = 'To add your first passkey or authenticator, enter your password again: your sign-in is more than 5 minutes old.';

function codeOf(secret: string, steps = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: Date.now() + steps * 30_000,
  });
}

/** Where the account page sends a person whose sign-in is too old to add a first factor: the password again. */
const passwordAgainHref = (email: string) => `/login?return_to=%2Faccount%2Fsecurity&amp;login_hint=${encodeURIComponent(email)}`;

/**
 * Issue 62, item 4 and the factor part of item 11: a stolen session cookie must not become a permanent way in. Adding
 * the first factor takes a password typed in the last five minutes; removing a factor ends the person's other
 * sessions and grants.
 */
describe('factor changes: a recent password for the first factor, sessions and grants ended when one goes', () => {
  let t: TestApp;
  let origin: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    origin = new URL(t.config.issuer).origin;
  });
  afterAll(() => t.close());

  const events = (type: string, userId: string) => auditEventsOf(t, type, userId);

  /** The person's sessions signed in `minutes` ago (as a cookie stolen from an old sign-in would be). */
  async function ageSessions(userId: string, minutes: number): Promise<void> {
    await t.app.get(DataSource).query(`UPDATE sessions SET auth_time = auth_time - ${minutes * 60_000} WHERE user_id = '${userId}'`);
  }

  const sessionCount = async (userId: string) =>
    Number(
      ((await t.app.get(DataSource).query(`SELECT COUNT(*) AS n FROM sessions WHERE user_id = '${userId}'`)) as { n: unknown }[])[0].n,
    );

  async function beginTotp(browser: Browser): Promise<Response> {
    const page = await browser.get(PAGE);
    return browser.post('/account/security/totp', formOf(page, '/account/security/totp'));
  }

  async function addPasskey(browser: Browser, authenticator: SoftAuthenticator): Promise<Response> {
    const page = await browser.get(PAGE);
    const form = formOf(page, '/account/security/passkeys');
    const options = await browser.postJson('/account/security/passkeys/options', { csrf: form.csrf });
    expect(options.status, JSON.stringify(options.body)).toBe(200);
    const answer = authenticator.register(options.body, { origin });
    return browser.post('/account/security/passkeys', { ...form, name: 'Mine', response: JSON.stringify(answer) });
  }

  /** Sets up an authenticator in `browser` (a recent sign-in): its key and recovery codes. */
  async function enrolTotp(browser: Browser): Promise<{ secret: string; codes: string[] }> {
    const begun = await beginTotp(browser);
    expectPage(begun, 200);
    const secret = /Key: <code>([A-Z2-7]+)<\/code>/.exec(begun.text)![1];
    const confirmed = await browser.post('/account/security/totp/confirm', {
      ...formOf(begun, '/account/security/totp/confirm'),
      code: codeOf(secret),
    });
    expectPage(confirmed, 200);
    const codes = [...confirmed.text.matchAll(/<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/code><\/li>/g)].map(
      (m) => m[1],
    );
    expect(codes).toHaveLength(10);
    return { secret, codes };
  }

  it('an old session of a person with no factor cannot set up an authenticator: asked for the password, then it works', async () => {
    const { user, browser } = await signedIn(t);
    await ageSessions(user.id, 6);

    const page = await browser.get(PAGE);
    expectPage(page, 200);
    expect(page.text).toContain(`<a href="${passwordAgainHref(user.email)}">Confirm it is you</a>`);
    const refused = await beginTotp(browser);
    expectPage(refused, 403);
    expect(refused.text).toContain(RECENT_PASSWORD);
    expect(refused.text).toContain(`<a href="${passwordAgainHref(user.email)}">Confirm it is you</a>`);
    expect(refused.text).not.toContain('Key: <code>');
    const rows = (await t.app.get(DataSource).query(`SELECT user_id FROM totp_factors WHERE user_id = '${user.id}'`)) as unknown[];
    expect(rows).toEqual([]);

    // The person types the password again (the login form, in the same browser): the session is renewed, and goes on.
    const again = await login(browser, user.email, undefined, PAGE);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(PAGE);
    await enrolTotp(browser);
    expect((await events('factor.enrolled', user.id)).map((e) => [e.actor, e.details])).toEqual([[`user:${user.id}`, { factor: 'totp' }]]);
    expect((await events('login.succeeded', user.id)).map((e) => e.details)).toContainEqual({ reauthentication: true });
  });

  it('an old session of a person with no factor cannot add a passkey (options and answer refused): after the password it can', async () => {
    const { user, browser } = await signedIn(t);
    // Options handed while the sign-in was recent do not let the answer through once it is old.
    const early = await browser.get(PAGE);
    const earlyForm = formOf(early, '/account/security/passkeys');
    const earlyOptions = await browser.postJson('/account/security/passkeys/options', { csrf: earlyForm.csrf });
    expect(earlyOptions.status).toBe(200);
    await ageSessions(user.id, 6);

    const authenticator = new SoftAuthenticator();
    const lateAnswer = authenticator.register(earlyOptions.body, { origin });
    const refusedAnswer = await browser.post('/account/security/passkeys', { ...earlyForm, response: JSON.stringify(lateAnswer) });
    expectPage(refusedAnswer, 403);
    expect(refusedAnswer.text).toContain(RECENT_PASSWORD);

    const page = await browser.get(PAGE);
    const refused = await browser.postJson('/account/security/passkeys/options', { csrf: formOf(page, '/account/security/passkeys').csrf });
    expect(refused.status).toBe(403);
    expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(refused.body).toMatchObject({ status: 403, detail: RECENT_PASSWORD });
    expect(await t.app.get(DataSource).query(`SELECT id FROM passkeys WHERE user_id = '${user.id}'`)).toEqual([]);
    expect(await events('factor.enrolled', user.id)).toEqual([]);

    expect((await login(browser, user.email, undefined, PAGE)).status).toBe(303);
    const added = await addPasskey(browser, authenticator);
    expect(added.status, added.text.slice(0, 600)).toBe(303);
    expect((await events('factor.enrolled', user.id)).map((e) => [e.actor, e.details])).toEqual([
      [`user:${user.id}`, { factor: 'passkey', passkey: 'Mine', synced: false }],
    ]);
  });

  it('the person signing in again elsewhere does not make a stolen old cookie recent', async () => {
    const { user, browser: stolen } = await signedIn(t);
    await ageSessions(user.id, 30);
    const elsewhere = new Browser(t);
    expect((await login(elsewhere, user.email)).status).toBe(303);
    expectPage(await beginTotp(stolen), 403);
    // A recent sign-in of the person's own browser is not hindered.
    expectPage(await beginTotp(elsewhere), 200);
  });

  it("removing the authenticator ends the person's other sessions and revokes their grants; this session stays", async () => {
    const { user, browser } = await signedIn(t);
    const { secret, codes } = await enrolTotp(browser);
    // Another browser, signed in with the password and a (recovery) code, and an application's grant made in it.
    const other = new Browser(t);
    const step = await login(other, user.email);
    expect((await other.post('/login/code', { ...formOf(step, '/login/code'), code: codes[0] })).status).toBe(303);
    const client = await registerClient(t, { trusted: true });
    const grant = await issueTokens(t, { browser: other, client });
    expect(await resourceStatus(t, grant.access)).toBe(200);
    // Someone else's session and grant stay.
    const bystander = await issueTokens(t, { client });

    const page = await browser.get(PAGE);
    const removed = await browser.post('/account/security/totp/remove', {
      ...formOf(page, '/account/security/totp/remove'),
      code: codeOf(secret, 1),
    });
    expect(removed.status, removed.text.slice(0, 400)).toBe(303);

    expect((await other.get('/account/apps')).status).toBe(302);
    expectOAuthError(await token(t, client, { grant_type: 'refresh_token', refresh_token: grant.refresh }), 400, 'invalid_grant');
    expect(await resourceStatus(t, grant.access)).toBe(401);
    expectPage(await browser.get(PAGE), 200);
    expect(await sessionCount(user.id)).toBe(1);
    expect((await token(t, client, { grant_type: 'refresh_token', refresh_token: bystander.refresh })).status).toBe(200);
    expect((await bystander.browser.get('/account/apps')).status).toBe(200);

    expect((await events('factor.removed', user.id)).map((e) => [e.actor, e.details])).toEqual([[`user:${user.id}`, { factor: 'totp' }]]);
    expect((await events('logout', user.id)).map((e) => [e.actor, e.details])).toEqual([
      [`user:${user.id}`, { via: 'factor removed', others: true }],
    ]);
    expect((await events('grant.revoked', user.id)).map((e) => [e.actor, e.details])).toEqual([
      [`user:${user.id}`, { via: 'factor removed', every: true }],
    ]);
  });

  it('removing a passkey ends the old password session that could have added it, and its grants', async () => {
    const { user, browser } = await signedIn(t);
    // The cookie of an older password sign-in (a stolen one, say), with an application's grant.
    const old = new Browser(t);
    expect((await login(old, user.email)).status).toBe(303);
    const client = await registerClient(t, { trusted: true });
    const grant = await issueTokens(t, { browser: old, client });
    const authenticator = new SoftAuthenticator();
    expect((await addPasskey(browser, authenticator)).status).toBe(303);
    // Removing a passkey takes a confirmed session: the person confirms it with the passkey.
    const stepUp = await browser.get('/login/step-up?return_to=%2Faccount%2Fsecurity&acr=aal2');
    const form = formOf(stepUp, '/login/passkey');
    const options = await browser.postJson('/login/passkey/options', { csrf: form.csrf, step: 'second-factor' });
    const confirmed = await browser.post('/login/passkey', {
      ...form,
      response: JSON.stringify(authenticator.authenticate(options.body, { origin })),
    });
    expect(confirmed.status).toBe(303);

    const page = await browser.get(PAGE);
    const removed = await browser.post('/account/security/passkeys/remove', {
      ...formOf(page, '/account/security/passkeys/remove'),
    });
    expect(removed.status, removed.text.slice(0, 400)).toBe(303);
    expect((await old.get('/account/apps')).status).toBe(302);
    expectOAuthError(await token(t, client, { grant_type: 'refresh_token', refresh_token: grant.refresh }), 400, 'invalid_grant');
    expectPage(await browser.get(PAGE), 200);
    expect((await events('factor.removed', user.id)).map((e) => [e.actor, e.details])).toEqual([
      [`user:${user.id}`, { factor: 'passkey', passkey: 'Mine' }],
    ]);
    expect((await events('logout', user.id)).map((e) => e.details)).toEqual([{ via: 'factor removed', others: true }]);
  });

  it("an operator's reset of the factors ends every session of the person and revokes their grants", async () => {
    const { user, browser } = await signedIn(t);
    await enrolTotp(browser);
    const client = await registerClient(t, { trusted: true });
    const grant = await issueTokens(t, { browser, client });

    const { removed } = await t.app.get(SignInFactorsService).resetAll(user.id, BY_SYSTEM);
    expect(removed).toEqual({ totp: true, passkeys: 0 });

    expect((await browser.get('/account/apps')).status).toBe(302);
    expect(await sessionCount(user.id)).toBe(0);
    expectOAuthError(await token(t, client, { grant_type: 'refresh_token', refresh_token: grant.refresh }), 400, 'invalid_grant');
    expect((await events('logout', user.id)).map((e) => [e.actor, e.details])).toEqual([
      ['system', { via: 'factor removed', every: true }],
    ]);
    expect((await events('grant.revoked', user.id)).map((e) => [e.actor, e.details])).toEqual([
      ['system', { via: 'factor removed', every: true }],
    ]);
  });

  it('a reset of a person with no factor changes nothing: sessions and grants stay', async () => {
    const { user, browser } = await signedIn(t);
    const client = await registerClient(t, { trusted: true });
    const grant = await issueTokens(t, { browser, client });
    expect((await t.app.get(SignInFactorsService).resetAll(user.id, BY_SYSTEM)).removed).toEqual({ totp: false, passkeys: 0 });
    expect((await browser.get('/account/apps')).status).toBe(200);
    expect((await token(t, client, { grant_type: 'refresh_token', refresh_token: grant.refresh })).status).toBe(200);
  });
});
