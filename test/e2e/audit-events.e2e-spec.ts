import { randomUUID } from 'node:crypto';
import { DataSource, TableColumn } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditEventView, AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { CodeGrantService } from '../../src/oauth/grants/code-grant.service';
import { RetentionService } from '../../src/retention/retention.service';
import {
  Browser,
  NO_RATE_LIMITS,
  authorizeCode,
  authorizePath,
  backChannel,
  basicAuth,
  expectOAuthError,
  issueTokens,
  login,
  pkcePair,
  registerClient,
  token,
} from '../support/oauth';
import { expectProblem, expectValidationProblem } from '../support/problem';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

const POSTGRES = Boolean(process.env.TEST_DATABASE_URL);
const LOOPBACK = /^(::ffff:)?127\.0\.0\.1$|^::1$/;

/** An event as GET /admin/audit-events answers it. */
type Event = AuditEventView;

describe('audit events (one row and one log line per security event, GET /admin/audit-events)', () => {
  let t: TestApp;
  let adminId: string;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    const admin = await t.createUser({ role: 'admin' });
    adminId = admin.id;
    adminToken = await t.token(admin.id, ['audit:read', 'clients:admin']);
  });
  afterAll(() => t.close());

  const events = async (query: Record<string, string>): Promise<Event[]> => {
    const res = await t
      .http()
      .get('/admin/audit-events')
      .query({ limit: '100', order: 'asc', ...query })
      .set(...bearer(adminToken));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as Event[];
  };
  const types = (list: Event[]) => list.map((e) => e.type);

  it('records a consented code flow and a refresh: who, which client, from where, with the request id', async () => {
    const user = await t.createUser();
    const client = await registerClient(t, { trusted: false, scope: 'users:read' });
    const browser = new Browser(t);
    const signIn = await login(browser, user.email);
    expect(signIn.status).toBe(303);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, {
      scope: 'users:read',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    const redeemed = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
    expect(redeemed.status).toBe(200);
    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: redeemed.body.refresh_token });
    expect(refreshed.status).toBe(200);

    const list = await events({ user_id: user.id });
    expect(types(list)).toEqual(['login.succeeded', 'consent.granted', 'code.issued', 'code.redeemed', 'refresh.rotated']);
    const [loginEvent, consent, issued, redeemedEvent, rotated] = list;
    expect(loginEvent).toMatchObject({
      actor: `user:${user.id}`,
      user_id: user.id,
      client_id: null,
      request_id: signIn.headers['x-request-id'],
    });
    expect(consent).toMatchObject({ actor: `user:${user.id}`, client_id: client.client_id });
    // The scope approved, and what it added to the person's consent for the client (all of it, the first time).
    expect(consent.details).toEqual({ scope: 'users:read', added: 'users:read' });
    expect(issued).toMatchObject({ actor: `user:${user.id}`, client_id: client.client_id, details: { scope: 'users:read' } });
    expect(redeemedEvent).toMatchObject({
      actor: `client:${client.client_id}`,
      user_id: user.id,
      client_id: client.client_id,
      request_id: redeemed.headers['x-request-id'],
    });
    expect(rotated).toMatchObject({
      actor: `client:${client.client_id}`,
      client_id: client.client_id,
      request_id: refreshed.headers['x-request-id'],
    });
    for (const event of list) {
      expect(event.address, event.type).toMatch(LOOPBACK);
      expect(Date.parse(event.at), event.type).toBeGreaterThan(Date.now() - 60_000);
    }
    // Never a secret: no code, token, verifier or password anywhere in the trail.
    const trail = JSON.stringify(list);
    for (const secret of [code, pkce.verifier, redeemed.body.refresh_token, refreshed.body.refresh_token, redeemed.body.access_token]) {
      expect(trail).not.toContain(secret);
    }
  });

  it('records the trusted flow of one statement per step too (the event is written by the same statement)', async () => {
    const { client, userId } = await issueTokens(t);
    const list = await events({ client_id: client.client_id });
    expect(types(list)).toEqual(['client.created', 'code.issued', 'code.redeemed']);
    expect(list[0]).toMatchObject({ actor: 'system', user_id: null, address: null, request_id: null });
    expect(list[1]).toMatchObject({ actor: `user:${userId}`, user_id: userId });
    expect(list[2]).toMatchObject({ actor: `client:${client.client_id}`, user_id: userId });
  });

  it('records failed logins without the email as typed, naming the person only when the account exists', async () => {
    const user = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, user.email, 'not the password')).status).toBe(401);
    const typo = `nobody-${randomUUID()}@example.com`;
    const unknown = await login(browser, typo, 'whatever password');
    expect(unknown.status).toBe(401);

    expect(await events({ user_id: user.id })).toEqual([
      expect.objectContaining({ type: 'login.failed', actor: 'anonymous', user_id: user.id, details: { reason: 'wrong password' } }),
    ]);
    const failed = await events({ type: 'login.failed' });
    const anonymous = failed.find((e) => e.request_id === unknown.headers['x-request-id']);
    expect(anonymous).toMatchObject({ user_id: null, details: { reason: 'unknown email' } });
    expect(JSON.stringify(failed)).not.toContain(typo);
  });

  it('records a denied consent, a replayed code, a reused refresh token and a revocation', async () => {
    const { user, browser } = await (async () => {
      const u = await t.createUser();
      const b = new Browser(t);
      expect((await login(b, u.email)).status).toBe(303);
      return { user: u, browser: b };
    })();
    const client = await registerClient(t, { trusted: false, scope: 'users:read' });
    const page = await browser.get(authorizePath({ response_type: 'code', client_id: client.client_id, scope: 'users:read', state: 's' }));
    expect((await browser.submit(page, { decision: 'deny' })).status).toBe(303);

    const trusted = await registerClient(t, { trusted: true });
    const code = await authorizeCode(browser, trusted);
    expect((await token(t, trusted, { grant_type: 'authorization_code', code })).status).toBe(200);
    const replay = await token(t, trusted, { grant_type: 'authorization_code', code });
    expectOAuthError(replay, 400, 'invalid_grant');

    const { refresh } = await issueTokens(t, { client: trusted, browser });
    expect((await token(t, trusted, { grant_type: 'refresh_token', refresh_token: refresh })).status).toBe(200);
    const reuse = await token(t, trusted, { grant_type: 'refresh_token', refresh_token: refresh });
    expectOAuthError(reuse, 400, 'invalid_grant');

    const third = await issueTokens(t, { client: trusted, browser });
    const revoked = await backChannel(t, '/revoke', trusted, { token: third.refresh });
    expect(revoked.status).toBe(200);

    const list = await events({ user_id: user.id });
    expect(list.find((e) => e.type === 'consent.denied')).toMatchObject({ client_id: client.client_id, details: { scope: 'users:read' } });
    expect(list.find((e) => e.type === 'code.replayed')).toMatchObject({
      actor: `client:${trusted.client_id}`,
      client_id: trusted.client_id,
      request_id: replay.headers['x-request-id'],
    });
    expect(list.find((e) => e.type === 'refresh.reused')).toMatchObject({
      client_id: trusted.client_id,
      request_id: reuse.headers['x-request-id'],
    });
    expect(list.find((e) => e.type === 'token.revoked')).toMatchObject({
      client_id: trusted.client_id,
      request_id: revoked.headers['x-request-id'],
    });
  });

  it('records failed client authentication, naming the client only when it exists, never the secret tried', async () => {
    const client = await registerClient(t, { trusted: true });
    const wrong = `wrong-${randomUUID()}`;
    const res = await t
      .http()
      .post('/token')
      .type('form')
      .set('Authorization', basicAuth(client.client_id, wrong))
      .send('grant_type=refresh_token&refresh_token=x');
    expectOAuthError(res, 401, 'invalid_client');
    const list = await events({ client_id: client.client_id, type: 'client.authentication_failed' });
    expect(list).toEqual([
      expect.objectContaining({ type: 'client.authentication_failed', actor: 'anonymous', request_id: res.headers['x-request-id'] }),
    ]);
    expect(JSON.stringify(list)).not.toContain(wrong);
  });

  it('writes at most 10 failed authentications of one client a minute: a flood costs a few rows', async () => {
    const client = await registerClient(t, { trusted: true });
    for (let i = 0; i < 13; i++) {
      const res = await backChannel(t, '/introspect', { ...client, client_secret: `wrong-${i}` }, { token: 'x' });
      expectOAuthError(res, 401, 'invalid_client');
    }
    expect(await events({ client_id: client.client_id, type: 'client.authentication_failed' })).toHaveLength(10);
  });

  it('records the admin API changes to a client with the administrator as actor, never the secret', async () => {
    const created = await t
      .http()
      .post('/admin/clients')
      .set(...bearer(adminToken))
      .send({ name: 'Audited', redirect_uris: ['https://audited.example/cb'], scope: 'users:read' });
    expect(created.status).toBe(201);
    const id = created.body.client_id as string;
    expect(
      (
        await t
          .http()
          .put(`/admin/clients/${id}`)
          .set(...bearer(adminToken))
          .send({ scope: 'users:read orders:read' })
      ).status,
    ).toBe(200);
    const rotated = await t
      .http()
      .post(`/admin/clients/${id}/secret`)
      .set(...bearer(adminToken));
    expect(rotated.status).toBe(200);
    expect(
      (
        await t
          .http()
          .delete(`/admin/clients/${id}`)
          .set(...bearer(adminToken))
      ).status,
    ).toBe(204);

    const list = await events({ client_id: id });
    expect(types(list)).toEqual(['client.created', 'client.updated', 'client.secret_rotated', 'client.deleted']);
    for (const event of list) expect(event.actor, event.type).toBe(`user:${adminId}`);
    expect(list[0].details).toEqual({ name: 'Audited', grant_types: 'authorization_code refresh_token' });
    expect(list[1].details).toEqual({ changed: 'scope' });
    const trail = JSON.stringify(list);
    expect(trail).not.toContain(created.body.client_secret);
    expect(trail).not.toContain(rotated.body.client_secret);
  });

  it('writes an event in the same transaction as its change: when the event cannot be stored, neither is the change', async () => {
    const dataSource = t.app.get(DataSource);
    const refuse = POSTGRES
      ? `ALTER TABLE audit_events ADD CONSTRAINT refuse_for_test CHECK (type NOT IN ('client.created', 'code.issued')) NOT VALID`
      : `CREATE TRIGGER refuse_for_test BEFORE INSERT ON audit_events WHEN NEW.type IN ('client.created', 'code.issued')
         BEGIN SELECT RAISE(ABORT, 'refused for the test'); END`;
    const name = `Never stored ${randomUUID().slice(0, 8)}`;
    const client = await registerClient(t, { trusted: true });
    const user = await t.createUser();
    const countCodes = async () =>
      Number((await dataSource.query(`SELECT COUNT(*) AS n FROM authorization_codes WHERE user_id = '${user.id}'`))[0].n);
    const registered = (await t.app.get(ClientsService).find(client.client_id))!;
    const issue = () =>
      t.app.get(CodeGrantService).issueCode({
        client: registered,
        userId: user.id,
        authTime: Date.now(),
        sid: randomUUID(),
        amr: 'pwd',
        nonce: null,
        scope: 'users:read',
        resources: [],
        redirectUri: null,
        codeChallenge: null,
        context: { address: '127.0.0.1', requestId: 'r-1' },
      });
    await issue();
    await dataSource.query(refuse);
    try {
      await expect(t.app.get(ClientsService).create({ name, redirectUris: ['https://x.example/cb'] })).rejects.toThrow();
      await expect(issue()).rejects.toThrow();
    } finally {
      await dataSource.query(POSTGRES ? `ALTER TABLE audit_events DROP CONSTRAINT refuse_for_test` : `DROP TRIGGER refuse_for_test`);
    }
    expect(await dataSource.query(`SELECT id FROM clients WHERE name = '${name}'`)).toEqual([]);
    expect(await countCodes()).toBe(1);
    expect(types(await events({ user_id: user.id }))).toEqual(['code.issued']);
  });

  it('lets a later migration rebuild the tables a code issue writes (no view names them) and keeps issuing', async () => {
    const dataSource = t.app.get(DataSource);
    if (!POSTGRES) {
      const views = (await dataSource.query(
        `SELECT name FROM sqlite_master WHERE type = 'view' OR name LIKE '%_issue_insert'`,
      )) as unknown[];
      expect(views).toEqual([]);
    }
    const q = dataSource.createQueryRunner();
    try {
      // What TypeORM does on SQLite for addColumn/dropColumn: a new table, the rows copied, the old one dropped, a rename.
      await q.addColumn('grants', new TableColumn({ name: 'note', type: 'varchar', length: '10', isNullable: true }));
      await q.dropColumn('grants', 'note');
    } finally {
      await q.release();
    }
    const { client } = await issueTokens(t);
    expect(types(await events({ client_id: client.client_id }))).toEqual(['client.created', 'code.issued', 'code.redeemed']);
  });

  it('filters by type, user, client and time, pages newest first by default', async () => {
    const { userId } = await issueTokens(t);
    const all = await t
      .http()
      .get('/admin/audit-events')
      .query({ user_id: userId })
      .set(...bearer(adminToken));
    expect(all.status).toBe(200);
    expect(all.body.page).toEqual({ limit: 20, offset: 0, total: 3 });
    expect(types(all.body.data)).toEqual(['code.redeemed', 'code.issued', 'login.succeeded']);
    const paged = await t
      .http()
      .get('/admin/audit-events')
      .query({ user_id: userId, limit: '1', offset: '1' })
      .set(...bearer(adminToken));
    expect(paged.body).toEqual({ data: [all.body.data[1]], page: { limit: 1, offset: 1, total: 3 } });
    expect(types(await events({ user_id: userId, type: 'code.issued' }))).toEqual(['code.issued']);
    const at = all.body.data[1].at as string;
    expect(types(await events({ user_id: userId, from: at }))).toEqual(['code.issued', 'code.redeemed']);
    expect(types(await events({ user_id: userId, to: at }))).toEqual(['login.succeeded']);
    expect(await events({ user_id: userId, from: '2001-01-01T00:00:00Z', to: '2001-01-02T00:00:00Z' })).toEqual([]);
  });

  it('refuses bad filters with 400 naming them, and anyone but an administrator with audit:read', async () => {
    const bad = await t
      .http()
      .get('/admin/audit-events')
      .query({ type: 'login', user_id: 'me', from: 'yesterday', to: '2026-W05', client_id: 'a\u0001b', sort: 'type' })
      .set(...bearer(adminToken));
    expectValidationProblem(bad, '/admin/audit-events', ['type', 'user_id', 'from', 'to', 'client_id', 'sort']);
    // ISO 8601 forms Date.parse cannot read, and a date-time without its time zone: 400, never a 500.
    for (const from of ['2026-123', '20260101', '2026-11-24T10:00:00', '2026-13-01T00:00:00Z']) {
      const res = await t
        .http()
        .get('/admin/audit-events')
        .query({ from })
        .set(...bearer(adminToken));
      expectValidationProblem(res, '/admin/audit-events', ['from']);
    }

    const person = await t.createUser();
    const notAdmin = await t
      .http()
      .get('/admin/audit-events')
      .set(...bearer(await t.token(person.id, ['audit:read'])));
    expectProblem(notAdmin, 403, '/admin/audit-events');
    const noScope = await t
      .http()
      .get('/admin/audit-events')
      .set(...bearer(await t.token(adminId, ['clients:admin'])));
    expectProblem(noScope, 403, '/admin/audit-events');
    expect((await t.http().get('/admin/audit-events')).status).toBe(401);
  });

  it('forgets events older than AUDIT_RETENTION_DAYS, in the retention job', async () => {
    const { userId } = await issueTokens(t);
    const retention = t.app.get(RetentionService);
    const stored = async () =>
      Number(((await t.app.get(DataSource).query('SELECT COUNT(*) AS n FROM audit_events')) as { n: string }[])[0].n);
    expect((await retention.prune(Date.now() + 89 * 86_400_000)).audit_events).toBe(0);
    expect(await events({ user_id: userId })).toHaveLength(3);
    // 91 days on, every event this suite wrote is past its time: all of them go.
    const before = await stored();
    expect((await retention.prune(Date.now() + 91 * 86_400_000)).audit_events).toBe(before);
    expect(await stored()).toBe(0);
    expect(await events({ user_id: userId })).toEqual([]);
  });
});

describe('audit events behind a trusted proxy (TRUST_PROXY=true)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, TRUST_PROXY: 'true' });
  });
  afterAll(() => t.close());

  const failedLogin = async (forwardedFor: string) => {
    const user = await t.createUser();
    const browser = new Browser(t);
    const page = await browser.get('/login');
    const res = await browser.submit(page, { email: user.email, password: 'not the password' }, { 'X-Forwarded-For': forwardedFor });
    expect(res.status).toBe(401);
    const list = await t.app.get(AuditService).list(Object.assign(new AuditEventsQueryDto(), { user_id: user.id }));
    return list.data;
  };

  it('records the address the proxy saw (the last X-Forwarded-For entry), not the one the client wrote', async () => {
    const [event] = await failedLogin('198.51.100.7, 203.0.113.9');
    expect(event).toMatchObject({ type: 'login.failed', address: '203.0.113.9' });
  });

  it('records no address for one that is not an IP address, however long: never a 500, the failure still recorded', async () => {
    const [event] = await failedLogin(`${'x'.repeat(300)}, not-an-address-${'y'.repeat(100)}`);
    expect(event).toMatchObject({ type: 'login.failed', address: null });
  });
});
