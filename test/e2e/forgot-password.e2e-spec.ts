import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PasswordReset } from '../../src/account-recovery/password-reset.entity';
import { MailConfig } from '../../src/mail/mail.config';
import { SetPasswordDto } from '../../src/users/dto/set-password.dto';
import { UsersService } from '../../src/users/users.service';
import { hashSecret } from '../../src/crypto/secrets';
import { Browser, NO_RATE_LIMITS, auditEventsOf, expectOAuthError, issueTokens, login, resourceStatus, token } from '../support/oauth';
import { SmtpInbox } from '../support/smtp-inbox';
import { TEST_PASSWORD, type TestApp, createTestApp } from '../support/test-app';

const NEW_PASSWORD = 'a brand new long password';
const SENT = 'If an account has this address, a link to reset its password is on its way. It works once, for 15 minutes.';
const DEAD_LINK = 'This link is invalid, was already used, or has expired. Ask for a new one.';

/** The reset link of a delivered message (the only URL in its text). */
function linkOf(text: string | undefined): URL {
  const found = /https?:\/\/\S+/.exec(text ?? '');
  expect(found, text).not.toBeNull();
  return new URL(found![0]);
}

/** "Forgot password" over e-mail, against a real SMTP server: the link, its single use, and what it ends. */
describe('forgot password', () => {
  let t: TestApp;
  const inbox = new SmtpInbox();

  beforeAll(async () => {
    await inbox.listen();
    t = await createTestApp({ ...NO_RATE_LIMITS, SMTP_URL: inbox.url, MAIL_FROM: 'accounts@example.com' });
  });
  afterAll(async () => {
    await t.close();
    await inbox.close();
  });

  const resets = () => t.app.get(DataSource).getRepository(PasswordReset);

  async function askForLink(email: string): Promise<{ answer: string; browser: Browser }> {
    const browser = new Browser(t);
    const form = await browser.get('/forgot-password');
    expect(form.status).toBe(200);
    const sent = await browser.submit(form, { email });
    expect(sent.status).toBe(200);
    return { answer: sent.text, browser };
  }

  it("mails a link from the login page's link; the link sets the password and ends the person's sessions and grants", async () => {
    const person = await t.createUser();
    const theirs = await issueTokens(t, { user: person });
    expect((await new Browser(t).get('/login')).text).toContain('<a href="/forgot-password">Forgot your password?</a>');

    const { answer } = await askForLink(person.email);
    expect(answer).toContain(SENT);
    const mail = await inbox.next(person.email);
    expect(mail.subject).toBe('Reset your password');
    expect(mail.from?.value[0].address).toBe('accounts@example.com');
    const link = linkOf(mail.text);
    expect(`${link.origin}${link.pathname}`).toBe(`${t.config.issuer}/reset-password`);
    // Only the hash of the link's secret is stored.
    const secret = link.searchParams.get('token')!;
    const stored = await resets().find({ where: { userId: person.id } });
    expect(stored.map((row) => row.tokenHash)).toEqual([hashSecret(secret)]);

    const browser = new Browser(t);
    const form = await browser.get(`${link.pathname}${link.search}`);
    expect(form.status).toBe(200);
    const done = await browser.submit(form, { password: NEW_PASSWORD });
    expect(done.status, done.text).toBe(200);
    expect(done.text).toContain('Your new password is set, and you were signed out everywhere.');

    expect(await resourceStatus(t, theirs.access)).toBe(401);
    expectOAuthError(await token(t, theirs.client, { grant_type: 'refresh_token', refresh_token: theirs.refresh }), 400, 'invalid_grant');
    expect((await theirs.browser.get('/account/apps')).status).toBe(302);
    expect((await login(new Browser(t), person.email, TEST_PASSWORD)).status).toBe(401);
    expect((await login(new Browser(t), person.email, NEW_PASSWORD)).status).toBe(303);
    expect((await auditEventsOf(t, 'user.password_reset_sent', person.id)).map((e) => e.actor)).toEqual(['anonymous']);
    expect((await auditEventsOf(t, 'user.password_changed', person.id)).map((e) => [e.actor, e.details])).toEqual([
      [`user:${person.id}`, { proof: 'reset link' }],
    ]);
    expect((await auditEventsOf(t, 'grant.revoked', person.id)).map((e) => e.details)).toEqual([{ via: 'reset link', every: true }]);

    // Used once: the same link again is dead, shown or posted.
    expect((await browser.get(`${link.pathname}${link.search}`)).status).toBe(400);
    const again = await browser.post('/reset-password', {
      token: secret,
      password: 'yet another long password',
      csrf: browser.cookies.get('login_csrf'),
    });
    expect(again.status).toBe(400);
    expect(again.text).toContain(DEAD_LINK);
    expect((await login(new Browser(t), person.email, NEW_PASSWORD)).status).toBe(303);
  });

  it('answers an unknown address exactly as a known one, and mails nothing to it', async () => {
    const person = await t.createUser();
    const unknown = await askForLink('nobody-here@example.com');
    const known = await askForLink(person.email);
    expect(unknown.answer).toBe(known.answer);
    await inbox.next(person.email);
    expect(inbox.messages.map((mail) => mail.to)).toEqual([]);
  });

  it('mails the address the account has, whatever case was typed', async () => {
    const person = await t.createUser();
    await askForLink(person.email.toUpperCase());
    const mail = await inbox.next(person.email);
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((v) => v.address) : []).toEqual([person.email]);
  });

  it("ends the links already sent when the person's password changes another way", async () => {
    const person = await t.createUser();
    await askForLink(person.email);
    const link = linkOf((await inbox.next(person.email)).text);
    await t.app
      .get(UsersService)
      .setPassword(Object.assign(new SetPasswordDto(), { email: person.email, password: 'an operator set this one' }));
    expect((await new Browser(t).get(`${link.pathname}${link.search}`)).status).toBe(400);
  });

  it('refuses a link after its time, a second link once one was used, and a made-up one', async () => {
    const person = await t.createUser();
    await askForLink(person.email);
    const first = linkOf((await inbox.next(person.email)).text).searchParams.get('token')!;
    await askForLink(person.email);
    const second = linkOf((await inbox.next(person.email)).text).searchParams.get('token')!;
    await resets().update({ tokenHash: hashSecret(first) }, { expiresAt: 1 });

    const browser = new Browser(t);
    const csrf = (await browser.get('/forgot-password'), browser.cookies.get('login_csrf'));
    const expired = await browser.post('/reset-password', { token: first, password: NEW_PASSWORD, csrf });
    expect([expired.status, expired.text.includes(DEAD_LINK)]).toEqual([400, true]);
    expect((await browser.get(`/reset-password?token=${first}`)).status).toBe(400);
    expect((await browser.get(`/reset-password?token=${'A'.repeat(43)}`)).status).toBe(400);
    expect((await browser.get('/reset-password?token=%00')).status).toBe(400);
    expect((await browser.get('/reset-password')).status).toBe(400);
    expect((await browser.post('/reset-password', { token: second, password: 'too short', csrf })).status).toBe(400);
    expect((await browser.post('/reset-password', { token: second, password: NEW_PASSWORD, csrf })).status).toBe(200);
    expect((await browser.post('/reset-password', { token: second, password: NEW_PASSWORD, csrf })).status).toBe(400);
    expect((await login(new Browser(t), person.email, NEW_PASSWORD)).status).toBe(303);
  });

  it('refuses a reset posted without the form’s CSRF token (another site’s form)', async () => {
    const person = await t.createUser();
    await askForLink(person.email);
    const token = linkOf((await inbox.next(person.email)).text).searchParams.get('token')!;
    const attacker = new Browser(t);
    expect((await attacker.post('/reset-password', { token, password: NEW_PASSWORD })).status).toBe(403);
    expect((await attacker.post('/forgot-password', { email: person.email })).status).toBe(403);
    expect((await login(new Browser(t), person.email, TEST_PASSWORD)).status).toBe(303);
  });
});

describe('forgot password without mail (production without SMTP_URL)', () => {
  let t: TestApp;

  beforeAll(async () => {
    const off = Object.assign(Object.create(MailConfig.prototype) as MailConfig, {
      smtpUrl: undefined,
      from: 'x@example.com',
      logInstead: false,
    });
    t = await createTestApp(NO_RATE_LIMITS, undefined, { overrides: [{ provide: MailConfig, useValue: off }] });
  });
  afterAll(() => t.close());

  it('says the feature is off, on the page and to a post', async () => {
    const browser = new Browser(t);
    const page = await browser.get('/forgot-password');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Password reset by e-mail is not available on this service.');
    const csrf = (await browser.get('/login'), browser.cookies.get('login_csrf'));
    expect((await browser.post('/forgot-password', { email: 'someone@example.com', csrf })).status).toBe(503);
  });
});
