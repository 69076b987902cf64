import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { Connection } from '../../src/connections/connection.entity';
import { Identity } from '../../src/connections/identity.entity';
import { Session } from '../../src/oauth/entities/session.entity';
import { User } from '../../src/users/user.entity';
import { Browser, NO_RATE_LIMITS, auditEventsOf, login, parseForm, parseForms } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';
import { UpstreamOidc } from '../support/upstream-oidc';

const KEK = randomBytes(32).toString('base64');

/** Company sign-in through an upstream OpenID Connect provider (oidc-provider), managed through the admin API. */
describe('company sign-in (OpenID Connect connection)', () => {
  let t: TestApp;
  let corp: UpstreamOidc;
  let other: UpstreamOidc;
  let admin: string;
  let connectionId: string;

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, KEY_ENCRYPTION_KEY: KEK });
    const callback = `${t.config.issuer}/login/connections/callback`;
    corp = new UpstreamOidc(callback);
    other = new UpstreamOidc(callback);
    await Promise.all([corp.start(), other.start()]);
    const person = await t.createUser({ role: 'admin' });
    admin = await t.token(person.id, ['connections:admin']);
    const created = await t
      .http()
      .post('/admin/connections')
      .auth(admin, { type: 'bearer' })
      .send({
        name: 'Example Corp',
        type: 'oidc',
        issuer: corp.issuer,
        client_id: corp.clientId,
        client_secret: corp.clientSecret,
        domains: ['corp.example'],
      });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    connectionId = created.body.id;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([corp.close(), other.close()]);
  });

  /** Starts a sign-in through `id` in `browser` and signs in upstream as `sub`: the answer of the callback. */
  async function signInThrough(browser: Browser, sub: string, id = connectionId, upstream = corp) {
    const start = await browser.get(`/login/connections/${id}?return_to=%2Faccount%2Fapps`);
    expect(start.status, start.text).toBe(303);
    const back = await upstream.signIn(start.headers.location, sub);
    return { back, answer: await browser.get(`${back.pathname}${back.search}`) };
  }

  it('is managed by administrators: created (secret sealed, never shown), listed, refused twice for a domain', async () => {
    const listed = await t.http().get('/admin/connections').auth(admin, { type: 'bearer' });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      {
        id: connectionId,
        name: 'Example Corp',
        type: 'oidc',
        issuer: corp.issuer,
        client_id: corp.clientId,
        has_client_secret: true,
        domains: ['corp.example'],
        trust_upstream_mfa: false,
        admin_groups: null,
        created_at: expect.any(String),
      },
    ]);
    const stored = await t.app.get(DataSource).getRepository(Connection).findOneByOrFail({ id: connectionId });
    expect(stored.clientSecret).not.toContain(corp.clientSecret);
    const again = { name: 'Twice', type: 'oidc', issuer: other.issuer, client_id: 'x', domains: ['corp.example'] };
    const twice = await t.http().post('/admin/connections').auth(admin, { type: 'bearer' }).send(again);
    expect([twice.status, twice.body.type]).toEqual([409, 'urn:problem-type:connection-domain-taken']);
    const person = await t.createUser();
    const notAdmin = await t
      .http()
      .get('/admin/connections')
      .auth(await t.token(person.id, ['connections:admin']), { type: 'bearer' });
    expect(notAdmin.status).toBe(403);
    const events = await t.app
      .get(AuditService)
      .list(Object.assign(new AuditEventsQueryDto(), { type: 'connection.created', limit: 10, offset: 0 }));
    expect(events.data.map((e) => [e.actor, e.details])).toEqual([
      [expect.stringMatching(/^user:/), { connection: connectionId, name: 'Example Corp' }],
    ]);
  });

  it('signs a new person in from the login page, creating them once (no password here), and knows them the next time', async () => {
    corp.accounts.set('u-ada', { sub: 'u-ada', email: 'ada@corp.example', email_verified: true, name: 'Ada Corp', gender: 'female' });
    const browser = new Browser(t);
    const page = await browser.get('/login');
    expect(page.text).toContain(
      `<a class="button secondary" href="/login/connections/${connectionId}?return_to=%2F">Sign in with Example Corp</a>`,
    );
    const { answer } = await signInThrough(browser, 'u-ada');
    expect([answer.status, answer.headers.location]).toEqual([303, '/account/apps']);
    expect((await browser.get('/account/apps')).text).toContain('Signed in as <strong>ada@corp.example</strong>');

    const identities = await t.app.get(DataSource).getRepository(Identity).findBy({ connectionId });
    expect(identities.map((i) => i.subject)).toEqual(['u-ada']);
    const userId = identities[0].userId;
    expect((await auditEventsOf(t, 'user.provisioned', userId)).map((e) => [e.actor, e.details])).toEqual([
      ['system', { connection: connectionId, role: 'user' }],
    ]);
    // The password form sends them to the connection: no password of this service is checked for them.
    const form = await login(new Browser(t), 'ada@corp.example', 'any password at all');
    expect([form.status, form.headers.location]).toEqual([303, `/login/connections/${connectionId}?return_to=%2F`]);
    const again = await signInThrough(new Browser(t), 'u-ada');
    expect(again.answer.status).toBe(303);
    expect(await t.app.get(DataSource).getRepository(Identity).countBy({ connectionId })).toBe(1);
    expect((await auditEventsOf(t, 'login.succeeded', userId)).length).toBe(2);
    // The sessions say how: through a connection (tokens' amr "fed"), one factor as far as this service knows (aal1).
    const sessions = await t.app.get(DataSource).getRepository(Session).findBy({ userId });
    expect(sessions.map((s) => s.amr)).toEqual(['fed', 'fed']);
  });

  it('keeps what the provider manages out of reach here: password, e-mail and new sign-in factors', async () => {
    corp.accounts.set('u-fay', { sub: 'u-fay', email: 'fay@corp.example', email_verified: true, name: 'Fay' });
    const browser = new Browser(t);
    expect((await signInThrough(browser, 'u-fay')).answer.status).toBe(303);
    const [identity] = await t.app.get(DataSource).getRepository(Identity).findBy({ subject: 'u-fay' });
    const token = await t.token(identity.userId, ['users:write']);
    const put = { email: 'fay@corp.example', name: 'Fay', gender: 'other', age: 0, password: 'a password of my own' };
    const changed = await t.http().put(`/users/${identity.userId}`).auth(token, { type: 'bearer' }).send(put);
    expect([changed.status, changed.body.type]).toEqual([409, 'urn:problem-type:credentials-managed-by-connection']);
    const moved = await t
      .http()
      .put(`/users/${identity.userId}`)
      .auth(token, { type: 'bearer' })
      .send({ ...put, password: undefined, email: 'fay@elsewhere.example' });
    expect(moved.status).toBe(409);
    const security = await browser.get('/account/security');
    const totp = await browser.post('/account/security/totp', { csrf: parseForms(security.text)[0].hidden.csrf });
    expect(totp.status).toBe(403);
    expect(totp.text).toContain('Your sign-in is managed by your company&#39;s identity provider');
  });

  it('lets a local account of a served domain keep signing in with its password', async () => {
    const local = await t.createUser({ email: 'first.admin@corp.example' });
    expect((await login(new Browser(t), local.email)).status).toBe(303);
  });

  it("sends the login form's address of a connection's domain to it, whatever password was typed", async () => {
    const browser = new Browser(t);
    const page = await browser.get('/login?return_to=%2Faccount%2Fsecurity');
    const posted = await browser.submit(page, { email: 'someone@Corp.Example', password: 'not checked here' });
    expect([posted.status, posted.headers.location]).toEqual([303, `/login/connections/${connectionId}?return_to=%2Faccount%2Fsecurity`]);
  });

  it('never hands a local account to whoever registered its address upstream (pre-account takeover)', async () => {
    const local = await t.createUser({ email: 'bob@corp.example' });
    corp.accounts.set('u-mallory', { sub: 'u-mallory', email: 'bob@corp.example', email_verified: true, name: 'Not Bob' });
    const browser = new Browser(t);
    const { answer } = await signInThrough(browser, 'u-mallory');
    expect(answer.status).toBe(403);
    expect(answer.text).toContain('An account with this e-mail address already exists here');
    expect((await browser.get('/account/apps')).status).toBe(302);
    expect(await t.app.get(DataSource).getRepository(Identity).countBy({ subject: 'u-mallory' })).toBe(0);
    expect((await login(new Browser(t), local.email)).status).toBe(303);
  });

  it('refuses an address the provider does not vouch for, and one of a domain the connection does not serve', async () => {
    corp.accounts.set('u-unverified', { sub: 'u-unverified', email: 'eve@corp.example', email_verified: false });
    corp.accounts.set('u-elsewhere', { sub: 'u-elsewhere', email: 'eve@elsewhere.example', email_verified: true });
    expect((await signInThrough(new Browser(t), 'u-unverified')).answer.status).toBe(403);
    const elsewhere = (await signInThrough(new Browser(t), 'u-elsewhere')).answer;
    expect([elsewhere.status, elsewhere.text.includes('does not sign in people of elsewhere.example here')]).toEqual([403, true]);
  });

  it('refuses an answer brought to another browser, and the same answer twice', async () => {
    corp.accounts.set('u-carl', { sub: 'u-carl', email: 'carl@corp.example', email_verified: true });
    const browser = new Browser(t);
    const start = await browser.get(`/login/connections/${connectionId}`);
    const back = await corp.signIn(start.headers.location, 'u-carl');
    // Login CSRF: the attacker's own answer, sent to a victim's browser (no state cookie there).
    const victim = await new Browser(t).get(`${back.pathname}${back.search}`);
    expect(victim.status).toBe(400);
    expect((await browser.get(`${back.pathname}${back.search}`)).status).toBe(303);
    // The state cookie is spent, and so is the sign-in.
    expect((await browser.get(`${back.pathname}${back.search}`)).status).toBe(400);
  });

  it("refuses another provider's answer to a sign-in through this one (mix-up, RFC 9207 iss)", async () => {
    other.accounts.set('u-carl', { sub: 'u-carl', email: 'carl@corp.example', email_verified: true });
    const browser = new Browser(t);
    const start = new URL((await browser.get(`/login/connections/${connectionId}`)).headers.location);
    // The other provider, handed this sign-in's state (its own client and PKCE challenge), answers to our callback.
    const forged = new URL('/auth', other.issuer);
    for (const name of ['response_type', 'scope', 'redirect_uri', 'state', 'nonce', 'code_challenge', 'code_challenge_method']) {
      forged.searchParams.set(name, start.searchParams.get(name)!);
    }
    forged.searchParams.set('client_id', other.clientId);
    const back = await other.signIn(forged.href, 'u-carl');
    expect(back.searchParams.get('iss')).toBe(other.issuer);
    const answer = await browser.get(`${back.pathname}${back.search}`);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('The identity provider&#39;s answer was refused.');
    const failed = await t.app
      .get(AuditService)
      .list(Object.assign(new AuditEventsQueryDto(), { type: 'login.failed', limit: 1, offset: 0 }));
    expect(failed.data[0].details).toEqual({
      reason: 'connection answer refused',
      error: 'OAUTH_INVALID_RESPONSE invalid response encountered: unexpected "iss" (issuer) response parameter value',
    });
    expect((await browser.get('/account/apps')).status).toBe(302);
  });

  it("gives the role of the provider's groups at each sign-in, when the connection maps them (a change audited)", async () => {
    const body = { name: 'Ops', type: 'oidc', issuer: other.issuer, client_id: other.clientId, client_secret: other.clientSecret };
    const created = await t
      .http()
      .post('/admin/connections')
      .auth(admin, { type: 'bearer' })
      .send({ ...body, domains: ['ops.example'], admin_groups: ['sign-in-admins'] });
    expect([created.status, created.body.admin_groups]).toEqual([201, ['sign-in-admins']]);
    other.accounts.set('u-olga', {
      sub: 'u-olga',
      email: 'olga@ops.example',
      email_verified: true,
      name: 'Olga',
      groups: ['staff', 'sign-in-admins'],
    });
    expect((await signInThrough(new Browser(t), 'u-olga', created.body.id, other)).answer.status).toBe(303);
    const [identity] = await t.app.get(DataSource).getRepository(Identity).findBy({ subject: 'u-olga' });
    const roleOf = async () => (await t.app.get(DataSource).getRepository(User).findOneByOrFail({ id: identity.userId })).role;
    expect(await roleOf()).toBe('admin');
    expect((await auditEventsOf(t, 'user.provisioned', identity.userId)).map((e) => e.details)).toEqual([
      { connection: created.body.id, role: 'admin' },
    ]);

    other.accounts.set('u-olga', {
      sub: 'u-olga',
      email: 'olga@ops.example',
      email_verified: true,
      name: 'Olga Renamed',
      groups: ['staff'],
    });
    expect((await signInThrough(new Browser(t), 'u-olga', created.body.id, other)).answer.status).toBe(303);
    expect(await roleOf()).toBe('user');
    const user = await t.app.get(DataSource).getRepository(User).findOneByOrFail({ id: identity.userId });
    expect(user.name).toBe('Olga Renamed');
    expect((await auditEventsOf(t, 'user.role_changed', identity.userId)).map((e) => [e.actor, e.details])).toEqual([
      ['system', { from: 'admin', to: 'user', connection: created.body.id }],
    ]);
  });

  it('lets a new connection of the domain vouch again for the people of a deleted one (and no one else)', async () => {
    const ops = (await t.http().get('/admin/connections').auth(admin, { type: 'bearer' })).body.find(
      (c: { name: string }) => c.name === 'Ops',
    );
    const [olga] = await t.app.get(DataSource).getRepository(Identity).findBy({ subject: 'u-olga' });
    expect((await t.http().delete(`/admin/connections/${ops.id}`).auth(admin, { type: 'bearer' })).status).toBe(204);
    expect(await t.app.get(DataSource).getRepository(Identity).countBy({ userId: olga.userId })).toBe(0);
    const body = { name: 'Ops again', type: 'oidc', issuer: other.issuer, client_id: other.clientId, client_secret: other.clientSecret };
    const again = await t
      .http()
      .post('/admin/connections')
      .auth(admin, { type: 'bearer' })
      .send({ ...body, domains: ['ops.example'] });
    expect(again.status).toBe(201);
    expect((await signInThrough(new Browser(t), 'u-olga', again.body.id, other)).answer.status).toBe(303);
    expect((await t.app.get(DataSource).getRepository(Identity).findBy({ userId: olga.userId })).map((i) => i.connectionId)).toEqual([
      again.body.id,
    ]);
    expect((await auditEventsOf(t, 'identity.linked', olga.userId)).map((e) => e.details)).toEqual([{ connection: again.body.id }]);
  });

  it('answers an unknown connection with a page, and deletes one with its identities (people stay)', async () => {
    expect((await new Browser(t).get('/login/connections/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await new Browser(t).get('/login/connections/not-a-uuid')).status).toBe(404);
    const page = await new Browser(t).get('/login');
    expect(parseForm(page.text).action).toBe('/login');
  });
});
