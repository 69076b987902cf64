import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SetPasswordDto } from '../../src/users/dto/set-password.dto';
import { UsersService } from '../../src/users/users.service';
import { Browser, NO_RATE_LIMITS, expectOAuthError, issueTokens, login, resourceStatus, token, auditEventsOf } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

/**
 * An operator's password reset (`user:set-password`, which calls UsersService.setPassword): whoever knew the old
 * password may hold a session or tokens, and loses them.
 */
describe("an operator's password reset", () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  const events = (type: string, userId: string) => auditEventsOf(t, type, userId);

  it("ends the person's sessions and grants (refresh tokens and access tokens refused), and no one else's", async () => {
    const person = await t.createUser();
    const other = await t.createUser();
    const theirs = await issueTokens(t, { user: person });
    const untouched = await issueTokens(t, { user: other });
    expect(await resourceStatus(t, theirs.access)).toBe(200);

    const reset = Object.assign(new SetPasswordDto(), { email: person.email, password: 'a brand new long password' });
    await t.app.get(UsersService).setPassword(reset);

    expect(await resourceStatus(t, theirs.access)).toBe(401);
    expectOAuthError(await token(t, theirs.client, { grant_type: 'refresh_token', refresh_token: theirs.refresh }), 400, 'invalid_grant');
    expect((await theirs.browser.get('/account/apps')).status).toBe(302);
    expect((await events('grant.revoked', person.id)).map((e) => [e.actor, e.details])).toEqual([
      ['system', { via: 'password reset', every: true }],
    ]);
    expect((await events('logout', person.id)).map((e) => [e.actor, e.details])).toEqual([
      ['system', { via: 'password reset', every: true }],
    ]);

    // Someone else's tokens and session are as they were.
    expect(await resourceStatus(t, untouched.access)).toBe(200);
    expect((await token(t, untouched.client, { grant_type: 'refresh_token', refresh_token: untouched.refresh })).status).toBe(200);
    expect((await untouched.browser.get('/account/apps')).status).toBe(200);

    // The new password signs in at once, and the tokens of that sign-in work.
    const browser = new Browser(t);
    expect((await login(browser, person.email, 'a brand new long password')).status).toBe(303);
    const fresh = await issueTokens(t, { browser, client: theirs.client });
    expect(await resourceStatus(t, fresh.access)).toBe(200);
  });
});
