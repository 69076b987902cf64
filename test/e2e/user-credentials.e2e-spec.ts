import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenIssuer } from '../../src/oauth/grants/token-issuer.service';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { profileOf, uniqueEmail } from '../support/factories';
import {
  Browser,
  NO_RATE_LIMITS,
  bearerChallenge,
  decodeJwt,
  expectOAuthError,
  issueTokens,
  login,
  resourceStatus,
  token,
  auditEventsOf,
} from '../support/oauth';
import { expectProblem } from '../support/problem';
import { ALL_SCOPES, TEST_PASSWORD, type TestApp, bearer, createTestApp } from '../support/test-app';

const NEW_PASSWORD = 'a brand new long password';
const STEP_UP_DETAIL = 'Changing the password or the email needs currentPassword, or an access token of a sign-in of level aal2.';
const OTHERS_DETAIL = "Changing another person's password or email needs an access token of a sign-in of level aal2.";

/**
 * PUT /users/{id} with a new password or email: whoever holds a person's users:write token (a stolen one, an
 * agent's) cannot take the account over with it. It takes the current password or a two-factor sign-in, ends the
 * person's other sessions and grants, and is audited; a role is an administrator's to change, audited too.
 */
describe('credential changes through PUT /users/{id}', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  const events = (type: string, userId: string) => auditEventsOf(t, type, userId);

  /** A token of a two-factor sign-in (acr aal2), as the authorization server issues after password and code. */
  const strongToken = (sub: string) =>
    t.app
      .get(TokenIssuer)
      .mintAccessToken({ sub, clientId: 'test-client', scope: ALL_SCOPES.join(' '), grantId: randomUUID(), amr: ['pwd', 'otp', 'mfa'] })
      .token;

  const put = (userId: string, accessToken: string, body: Record<string, unknown>) =>
    t
      .http()
      .put(`/users/${userId}`)
      .set(...bearer(accessToken))
      .send(body);

  const current = async (user: UserResponseDto) =>
    (
      await t
        .http()
        .get(`/users/${user.id}`)
        .set(...bearer(await t.token(user.id)))
    ).body as UserResponseDto;

  const signsIn = async (email: string, password: string) => (await login(new Browser(t), email, password)).status === 303;

  describe('the attack: a users:write token of the person, without the current password', () => {
    it('cannot set a new password (401 step-up challenge), and the old password still signs in', async () => {
      const person = await t.createUser();
      const res = await put(person.id, await t.token(person.id), profileOf(person, { password: NEW_PASSWORD }));
      expectProblem(res, 401, `/users/${person.id}`);
      expect(res.body.detail).toBe(STEP_UP_DETAIL);
      expect(res.headers['www-authenticate']).toBe(
        bearerChallenge(t, `error="insufficient_user_authentication", error_description="${STEP_UP_DETAIL}", acr_values="aal2"`),
      );
      expect(await signsIn(person.email, TEST_PASSWORD)).toBe(true);
      expect(await signsIn(person.email, NEW_PASSWORD)).toBe(false);
      expect(await events('user.password_changed', person.id)).toEqual([]);
    });

    it('cannot set a new email (an account taken over through a reset), and the record stays', async () => {
      const person = await t.createUser();
      const res = await put(person.id, await t.token(person.id), profileOf(person, { email: uniqueEmail('attacker') }));
      expectProblem(res, 401, `/users/${person.id}`);
      expect(res.body.detail).toBe(STEP_UP_DETAIL);
      expect(await current(person)).toEqual(person);
    });

    it('cannot with a wrong current password either (403), nor with a real token of a password sign-in', async () => {
      const person = await t.createUser();
      const theirs = await issueTokens(t, { user: person });
      const wrong = await put(
        person.id,
        theirs.access,
        profileOf(person, { password: NEW_PASSWORD, currentPassword: 'not the password at all' }),
      );
      expectProblem(wrong, 403, `/users/${person.id}`);
      expect(wrong.body.detail).toBe('currentPassword is not the current password.');
      const none = await put(person.id, theirs.access, profileOf(person, { email: uniqueEmail('attacker') }));
      expectProblem(none, 401, `/users/${person.id}`);
      expect(await current(person)).toEqual(person);
      expect(await signsIn(person.email, TEST_PASSWORD)).toBe(true);
      expect(await resourceStatus(t, theirs.access)).toBe(200);
    });

    it("cannot as an administrator of a password sign-in change another person's password or email", async () => {
      const admin = await t.createUser({ role: 'admin' });
      const person = await t.createUser();
      const adminToken = await t.token(admin.id);
      for (const change of [{ password: NEW_PASSWORD }, { email: uniqueEmail('admin-set') }]) {
        // The person's current password is no proof from an administrator: only their own second factor is.
        const res = await put(person.id, adminToken, profileOf(person, { ...change, currentPassword: TEST_PASSWORD }));
        expectProblem(res, 401, `/users/${person.id}`);
        expect(res.body.detail).toBe(OTHERS_DETAIL);
        expect(res.headers['www-authenticate']).toBe(
          bearerChallenge(t, `error="insufficient_user_authentication", error_description="${OTHERS_DETAIL}", acr_values="aal2"`),
        );
      }
      expect(await current(person)).toEqual(person);
    });

    it('cannot change their own role, not even with the current password or an aal2 token (403)', async () => {
      const person = await t.createUser();
      for (const accessToken of [await t.token(person.id), strongToken(person.id)]) {
        const res = await put(person.id, accessToken, profileOf(person, { role: 'admin', currentPassword: TEST_PASSWORD }));
        expectProblem(res, 403, `/users/${person.id}`);
        expect(res.body.detail).toBe('Only an administrator may set a role.');
      }
      expect((await current(person)).role).toBe('user');
      expect(await events('user.role_changed', person.id)).toEqual([]);
    });
  });

  describe('the allowed changes', () => {
    it("with currentPassword: the password changes, the person's other sessions and grants end, and it is audited", async () => {
      const person = await t.createUser();
      const caller = await issueTokens(t, { user: person });
      const other = await issueTokens(t, { user: person });
      const someoneElse = await issueTokens(t);

      const res = await put(person.id, caller.access, profileOf(person, { password: NEW_PASSWORD, currentPassword: TEST_PASSWORD }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: person.id, email: person.email, role: 'user' });
      expect(await signsIn(person.email, NEW_PASSWORD)).toBe(true);
      expect(await signsIn(person.email, TEST_PASSWORD)).toBe(false);

      // The other grant: refresh token refused, access token refused; every browser session signed out.
      expectOAuthError(await token(t, other.client, { grant_type: 'refresh_token', refresh_token: other.refresh }), 400, 'invalid_grant');
      expect(await resourceStatus(t, other.access)).toBe(401);
      expect((await other.browser.get('/account/apps')).status).toBe(302);
      expect((await caller.browser.get('/account/apps')).status).toBe(302);
      // The grant that made the change, with the password, goes on; someone else's is untouched.
      expect(await resourceStatus(t, caller.access)).toBe(200);
      expect((await token(t, caller.client, { grant_type: 'refresh_token', refresh_token: caller.refresh })).status).toBe(200);
      expect((await token(t, someoneElse.client, { grant_type: 'refresh_token', refresh_token: someoneElse.refresh })).status).toBe(200);
      expect((await someoneElse.browser.get('/account/apps')).status).toBe(200);

      const actor = `user:${person.id}`;
      expect((await events('user.password_changed', person.id)).map((e) => [e.actor, e.details])).toEqual([
        [actor, { proof: 'current password' }],
      ]);
      // Every grant but the caller's, which the event names.
      const kept = decodeJwt(caller.access).payload.gid;
      expect((await events('grant.revoked', person.id)).map((e) => [e.actor, e.details])).toEqual([
        [actor, { via: 'password change', every: true, kept }],
      ]);
      expect((await events('logout', person.id)).map((e) => [e.actor, e.details])).toEqual([
        [actor, { via: 'password change', every: true }],
      ]);
    });

    it('with currentPassword: the email changes, sessions and grants end, audited without the addresses', async () => {
      const person = await t.createUser();
      const caller = await issueTokens(t, { user: person });
      const other = await issueTokens(t, { user: person });
      const email = uniqueEmail('moved');
      const res = await put(person.id, caller.access, profileOf(person, { email, currentPassword: TEST_PASSWORD }));
      expect(res.status).toBe(200);
      expect(res.body.email).toBe(email);
      expect(await signsIn(email, TEST_PASSWORD)).toBe(true);
      expectOAuthError(await token(t, other.client, { grant_type: 'refresh_token', refresh_token: other.refresh }), 400, 'invalid_grant');
      expect((await other.browser.get('/account/apps')).status).toBe(302);
      expect((await events('user.email_changed', person.id)).map((e) => [e.actor, e.details])).toEqual([
        [`user:${person.id}`, { proof: 'current password' }],
      ]);
      const kept = decodeJwt(caller.access).payload.gid;
      expect((await events('grant.revoked', person.id)).map((e) => e.details)).toEqual([{ via: 'email change', every: true, kept }]);
    });

    it('with a token of an aal2 sign-in: no current password needed', async () => {
      const person = await t.createUser();
      const other = await issueTokens(t, { user: person });
      const res = await put(person.id, strongToken(person.id), profileOf(person, { password: NEW_PASSWORD }));
      expect(res.status).toBe(200);
      expect(await signsIn(person.email, NEW_PASSWORD)).toBe(true);
      expectOAuthError(await token(t, other.client, { grant_type: 'refresh_token', refresh_token: other.refresh }), 400, 'invalid_grant');
      expect((await events('user.password_changed', person.id)).map((e) => e.details)).toEqual([{ proof: 'aal2' }]);
    });

    it("an administrator of an aal2 sign-in sets another person's password: every grant of theirs ends", async () => {
      const admin = await t.createUser({ role: 'admin' });
      const person = await t.createUser();
      const theirs = await issueTokens(t, { user: person });
      const res = await put(person.id, strongToken(admin.id), profileOf(person, { password: NEW_PASSWORD }));
      expect(res.status).toBe(200);
      expect(await signsIn(person.email, NEW_PASSWORD)).toBe(true);
      expectOAuthError(await token(t, theirs.client, { grant_type: 'refresh_token', refresh_token: theirs.refresh }), 400, 'invalid_grant');
      expect(await resourceStatus(t, theirs.access)).toBe(401);
      expect((await theirs.browser.get('/account/apps')).status).toBe(302);
      expect((await events('user.password_changed', person.id)).map((e) => [e.actor, e.details])).toEqual([
        [`user:${admin.id}`, { proof: 'aal2' }],
      ]);
    });

    it('an administrator changes a role, audited with both roles; the same role again is no change', async () => {
      const admin = await t.createUser({ role: 'admin' });
      const person = await t.createUser();
      const adminToken = await t.token(admin.id);
      expect((await put(person.id, adminToken, profileOf(person, { role: 'admin' }))).status).toBe(200);
      expect((await put(person.id, adminToken, profileOf(person, { role: 'admin' }))).status).toBe(200);
      expect((await events('user.role_changed', person.id)).map((e) => [e.actor, e.details])).toEqual([
        [`user:${admin.id}`, { from: 'user', to: 'admin' }],
      ]);
    });

    it('a profile change keeping password and email (in any letter case) needs no proof and ends nothing', async () => {
      const person = await t.createUser();
      const theirs = await issueTokens(t, { user: person });
      const res = await put(person.id, theirs.access, profileOf(person, { name: 'Renamed', email: person.email.toUpperCase() }));
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('Renamed');
      expect((await token(t, theirs.client, { grant_type: 'refresh_token', refresh_token: theirs.refresh })).status).toBe(200);
      expect((await theirs.browser.get('/account/apps')).status).toBe(200);
      expect(await events('grant.revoked', person.id)).toEqual([]);
    });

    it('refuses a currentPassword that is not a string (400 naming it)', async () => {
      const person = await t.createUser();
      const res = await put(person.id, await t.token(person.id), profileOf(person, { password: NEW_PASSWORD, currentPassword: 12 }));
      expectProblem(res, 400, `/users/${person.id}`, { errors: true });
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['currentPassword']);
    });
  });
});
