import { SchedulerRegistry } from '@nestjs/schedule';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlRunner, sql } from '../../src/database/sql';
import { RetentionService } from '../../src/retention/retention.service';
import { PasskeysService } from '../../src/mfa/passkeys.service';
import { PushedRequestsService } from '../../src/oauth/par/pushed-requests.service';
import { SecondFactorsService } from '../../src/mfa/second-factors.service';
import { hashSecret } from '../../src/crypto/secrets';
import { NO_RATE_LIMITS, authorizeCode, decodeJwt, expectOAuthError, issueTokens, registerClient, signedIn, token } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

const ACCESS_TOKEN_TTL = 900;
const HOUR = 3_600_000;

const COUNT_GRANT = sql`SELECT COUNT(*) AS n FROM grants WHERE id = :id`;
const COUNT_REFRESH = sql`SELECT COUNT(*) AS n FROM refresh_tokens WHERE grant_id = :id`;
const COUNT_CODES = sql`SELECT COUNT(*) AS n FROM authorization_codes WHERE grant_id = :id`;
const COUNT_SESSIONS = sql`SELECT COUNT(*) AS n FROM sessions WHERE user_id = :id`;
const COUNT_JTIS = sql`SELECT COUNT(*) AS n FROM client_assertion_jtis WHERE client_id = :id`;
const COUNT_REVOKED = sql`SELECT COUNT(*) AS n FROM revoked_grants WHERE grant_id = :id`;
const END_GRANT = sql`UPDATE grants SET expires_at = :at WHERE id = :id`;
const EXPIRE_CODES = sql`UPDATE authorization_codes SET expires_at = :at WHERE grant_id = :id`;
const EXPIRE_SESSIONS = sql`UPDATE sessions SET expires_at = :at WHERE user_id = :id`;
const COUNT_CHALLENGES = sql`SELECT COUNT(*) AS n FROM login_challenges WHERE user_id = :id`;
const EXPIRE_CHALLENGES = sql`UPDATE login_challenges SET expires_at = :at WHERE user_id = :id`;
const COUNT_PUSHED = sql`SELECT COUNT(*) AS n FROM pushed_requests WHERE client_id = :id`;
const INSERT_DEVICE = sql`
  INSERT INTO device_authorizations
    (id, user_code_hash, client_id, scope, resources, status, interval_seconds, next_poll_at, created_at, expires_at, user_id, grant_id)
  VALUES (:id, :id, :clientId, :scope, NULL, 'pending', 5, 0, 0, :expiresAt, NULL, NULL)`;
const COUNT_DEVICE = sql`SELECT COUNT(*) AS n FROM device_authorizations WHERE id = :id`;
const INSERT_PROOF = sql`INSERT INTO dpop_proofs (id, expires_at) VALUES (:id, :expiresAt)`;
const COUNT_PROOF = sql`SELECT COUNT(*) AS n FROM dpop_proofs WHERE id = :id`;
const EXPIRE_PUSHED = sql`UPDATE pushed_requests SET expires_at = :at WHERE client_id = :clientId AND params LIKE '%expired%'`;
const INSERT_RESET = sql`
  INSERT INTO password_resets (token_hash, user_id, created_at, expires_at, used_at) VALUES (:hash, :userId, :at, :expiresAt, NULL)`;
const COUNT_RESETS = sql`SELECT COUNT(*) AS n FROM password_resets WHERE user_id = :id`;
const COUNT_WEBAUTHN = sql`SELECT COUNT(*) AS n FROM webauthn_challenges WHERE user_id = :id`;
const EXPIRE_WEBAUTHN = sql`UPDATE webauthn_challenges SET expires_at = :at WHERE user_id = :id`;
const EXPIRE_REVOKED = sql`UPDATE revoked_grants SET expires_at = :at WHERE grant_id = :id`;
const CODE_GRANT = sql`SELECT grant_id FROM authorization_codes WHERE code_hash = :codeHash`;
const INSERT_JTI = sql`INSERT INTO client_assertion_jtis (client_id, jti_hash, expires_at) VALUES (:clientId, :jtiHash, :expiresAt)`;
const INSERT_AUDIT = sql`INSERT INTO audit_events (id, at, type, actor) VALUES (:id, :at, :type, 'system')`;
const COUNT_AUDIT = sql`SELECT COUNT(*) AS n FROM audit_events WHERE type = :id`;
const DAY = 86_400_000;

/**
 * Retention: what nothing can use any more is deleted — codes past their replay window, ended grants with their
 * refresh tokens and codes, expired sessions, used client-assertion ids, revoked-list entries past every token's
 * life, audit events past AUDIT_RETENTION_DAYS — each module's steps in one job, in batches, while everything still
 * in use stays and keeps working.
 */
describe('the retention job', () => {
  let t: TestApp;
  let db: SqlRunner;
  const count = async (statement: ReturnType<typeof sql>, id: string) =>
    Number((await db.one<{ n: number | string }>(statement, { id }))!.n);

  beforeAll(async () => {
    // No timer: the test runs the job itself.
    t = await createTestApp({ ...NO_RATE_LIMITS, ACCESS_TOKEN_TTL: String(ACCESS_TOKEN_TTL), PRUNE_INTERVAL_SECONDS: '0' });
    db = t.app.get(SqlRunner);
  });
  afterAll(() => t.close());

  it('deletes what has ended, keeps what is in use, and counts it in pruned_rows_total', async () => {
    const client = await registerClient(t, { trusted: true });
    const now = Date.now();
    const longAgo = now - ACCESS_TOKEN_TTL * 1000 - HOUR;

    // In use: a live grant with a rotated and a live refresh token, and its redeemed code (expired long ago, kept
    // while the grant lives: a replay of it still revokes the grant).
    const live = await issueTokens(t, { client });
    const liveGrant = decodeJwt(live.access).payload.gid as string;
    const liveRotated = await token(t, client, { grant_type: 'refresh_token', refresh_token: live.refresh });
    expect(liveRotated.status).toBe(200);
    await db.run(EXPIRE_CODES, { id: liveGrant, at: longAgo });
    // A code never redeemed, expired: it goes (its grant, not ended, stays).
    const { browser } = await signedIn(t);
    const unredeemed = await authorizeCode(browser, client);
    const unredeemedGrant = (await db.one<{ grant_id: string }>(CODE_GRANT, { codeHash: hashSecret(unredeemed) }))!.grant_id;
    await db.run(EXPIRE_CODES, { id: unredeemedGrant, at: now - 1_000 });

    // Ended: a grant past its end for longer than an access token lives, with its refresh tokens and code.
    const ended = await issueTokens(t, { client });
    const endedGrant = decodeJwt(ended.access).payload.gid as string;
    const endedRotated = await token(t, client, { grant_type: 'refresh_token', refresh_token: ended.refresh });
    expect(endedRotated.status).toBe(200);
    await db.run(END_GRANT, { id: endedGrant, at: longAgo });
    // Ended a moment ago: its last access tokens may live on, so it stays.
    const justEnded = await issueTokens(t, { client });
    const justEndedGrant = decodeJwt(justEnded.access).payload.gid as string;
    await db.run(END_GRANT, { id: justEndedGrant, at: now - 1_000 });

    // Sessions: an expired one goes, a live one stays.
    const gone = await signedIn(t);
    const kept = await signedIn(t);
    await db.run(EXPIRE_SESSIONS, { id: gone.user.id, at: now - 1_000 });

    // Sign-ins that waited for a second factor: an expired one goes, a live one stays.
    const [waitedInVain, waiting] = [await t.createUser(), await t.createUser()];
    for (const person of [waitedInVain, waiting]) await t.app.get(SecondFactorsService).startChallenge(person.id, '/');
    await db.run(EXPIRE_CHALLENGES, { id: waitedInVain.id, at: now - 1_000 });
    // Pushed authorization requests: one past its lifetime, one still live.
    for (const state of ['expired', 'live']) await t.app.get(PushedRequestsService).push(client.client_id, { state });
    await db.run(EXPIRE_PUSHED, { clientId: client.client_id, at: now - 1_000 });
    // Passkey challenges: one no browser answered in time, one still live.
    for (const person of [waitedInVain, waiting]) await t.app.get(PasskeysService).authenticationOptions(person.id);
    await db.run(EXPIRE_WEBAUTHN, { id: waitedInVain.id, at: now - 1_000 });

    // Revoked-list entries: one past its tokens' life goes, a fresh one stays.
    const revoked = await issueTokens(t, { client });
    const revokedGrant = decodeJwt(revoked.access).payload.gid as string;
    const stillRevoked = await issueTokens(t, { client });
    const stillRevokedGrant = decodeJwt(stillRevoked.access).payload.gid as string;
    for (const tokens of [revoked, stillRevoked]) {
      expect(
        (await t.http().post('/revoke').auth(client.client_id, client.client_secret!).type('form').send({ token: tokens.refresh })).status,
      ).toBe(200);
    }
    await db.run(EXPIRE_REVOKED, { id: revokedGrant, at: now - 1_000 });

    // Used client-assertion ids: more expired ones than one batch deletes, and one still live.
    const expiredJtis = 2_500;
    for (let i = 0; i < expiredJtis; i++)
      await db.run(INSERT_JTI, { clientId: client.client_id, jtiHash: `expired-${i}`, expiresAt: now - 1_000 });
    await db.run(INSERT_JTI, { clientId: client.client_id, jtiHash: 'live', expiresAt: now + HOUR });
    // Device authorization requests: one past its lifetime, one still waiting.
    await db.run(INSERT_DEVICE, { id: 'old-device', clientId: client.client_id, scope: 'orders:read', expiresAt: now - 1_000 });
    await db.run(INSERT_DEVICE, { id: 'waiting-device', clientId: client.client_id, scope: 'orders:read', expiresAt: now + 60_000 });
    // Used DPoP proofs: one too old to be accepted again, one still recent.
    await db.run(INSERT_PROOF, { id: 'old-proof', expiresAt: now - 1_000 });
    await db.run(INSERT_PROOF, { id: 'recent-proof', expiresAt: now + 60_000 });
    // Audit events: more older than AUDIT_RETENTION_DAYS (90) than one batch deletes, and one a day younger.
    const oldEvents = 2_500;
    for (let i = 0; i < oldEvents; i++) await db.run(INSERT_AUDIT, { id: `old-${i}`, at: now - 91 * DAY, type: 'test.old' });
    await db.run(INSERT_AUDIT, { id: 'younger', at: now - 89 * DAY, type: 'test.younger' });

    // Password reset links: one past its time, one still working.
    await db.run(INSERT_RESET, { hash: 'old-reset', userId: kept.user.id, at: now - HOUR, expiresAt: now - 1_000 });
    await db.run(INSERT_RESET, { hash: 'live-reset', userId: kept.user.id, at: now, expiresAt: now + 60_000 });

    const deleted = await t.app.get(RetentionService).prune(now);
    expect(deleted).toEqual({
      authorization_codes: 2,
      refresh_tokens: 2,
      grants: 1,
      sessions: 1,
      client_assertion_jtis: expiredJtis,
      login_challenges: 1,
      pushed_requests: 1,
      device_authorizations: 1,
      dpop_proofs: 1,
      webauthn_challenges: 1,
      password_resets: 1,
      connection_logins: 0,
      revoked_grants: 1,
      audit_events: oldEvents,
    });

    expect(await count(COUNT_GRANT, endedGrant)).toBe(0);
    expect(await count(COUNT_REFRESH, endedGrant)).toBe(0);
    expect(await count(COUNT_CODES, endedGrant)).toBe(0);
    expect(await count(COUNT_GRANT, liveGrant)).toBe(1);
    expect(await count(COUNT_REFRESH, liveGrant)).toBe(2);
    expect(await count(COUNT_CODES, liveGrant)).toBe(1);
    expect(await count(COUNT_CODES, unredeemedGrant)).toBe(0);
    expect(await count(COUNT_GRANT, unredeemedGrant)).toBe(1);
    expect(await count(COUNT_GRANT, justEndedGrant)).toBe(1);
    expect(await count(COUNT_SESSIONS, gone.user.id)).toBe(0);
    expect(await count(COUNT_SESSIONS, kept.user.id)).toBe(1);
    expect(await count(COUNT_REVOKED, revokedGrant)).toBe(0);
    expect(await count(COUNT_REVOKED, stillRevokedGrant)).toBe(1);
    expect(await count(COUNT_JTIS, client.client_id)).toBe(1);
    expect(await count(COUNT_CHALLENGES, waitedInVain.id)).toBe(0);
    expect(await count(COUNT_CHALLENGES, waiting.id)).toBe(1);
    expect(await count(COUNT_PUSHED, client.client_id)).toBe(1);
    expect(await count(COUNT_DEVICE, 'old-device')).toBe(0);
    expect(await count(COUNT_DEVICE, 'waiting-device')).toBe(1);
    expect(await count(COUNT_PROOF, 'old-proof')).toBe(0);
    expect(await count(COUNT_PROOF, 'recent-proof')).toBe(1);
    expect(await count(COUNT_WEBAUTHN, waitedInVain.id)).toBe(0);
    expect(await count(COUNT_WEBAUTHN, waiting.id)).toBe(1);
    expect(await count(COUNT_RESETS, kept.user.id)).toBe(1);
    expect(await count(COUNT_AUDIT, 'test.old')).toBe(0);
    expect(await count(COUNT_AUDIT, 'test.younger')).toBe(1);

    // What stays still works; what went is gone for its holder too.
    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: liveRotated.body.refresh_token });
    expect(refreshed.status).toBe(200);
    expectOAuthError(
      await token(t, client, { grant_type: 'refresh_token', refresh_token: endedRotated.body.refresh_token }),
      400,
      'invalid_grant',
    );
    expect((await kept.browser.get('/account/apps')).status).toBe(200);

    const metrics = await t.http().get('/metrics');
    expect(metrics.text).toContain('pruned_rows_total{table="grants"} 1');
    expect(metrics.text).toContain(`pruned_rows_total{table="client_assertion_jtis"} ${expiredJtis}`);

    // A second run finds nothing more.
    expect(await t.app.get(RetentionService).prune(now)).toEqual({
      authorization_codes: 0,
      refresh_tokens: 0,
      grants: 0,
      sessions: 0,
      client_assertion_jtis: 0,
      login_challenges: 0,
      pushed_requests: 0,
      device_authorizations: 0,
      dpop_proofs: 0,
      webauthn_challenges: 0,
      password_resets: 0,
      connection_logins: 0,
      revoked_grants: 0,
      audit_events: 0,
    });
  }, 120_000);

  it('runs on its own every PRUNE_INTERVAL_SECONDS, a job of the scheduler cleared at shutdown with the others', async () => {
    const timed = await createTestApp({ ...NO_RATE_LIMITS, PRUNE_INTERVAL_SECONDS: '1' });
    const scheduler = timed.app.get(SchedulerRegistry);
    try {
      const runner = timed.app.get(SqlRunner);
      const client = await registerClient(timed, { trusted: true });
      await runner.run(INSERT_JTI, { clientId: client.client_id, jtiHash: 'expired', expiresAt: Date.now() - 1_000 });
      let left = 1;
      for (let waited = 0; left > 0 && waited < 5_000; waited += 100) {
        await new Promise((r) => setTimeout(r, 100));
        left = Number((await runner.one<{ n: number | string }>(COUNT_JTIS, { id: client.client_id }))!.n);
      }
      expect(left).toBe(0);
      // The first run, at a random time within the interval, has handed over to the interval.
      expect(scheduler.getTimeouts()).toEqual([]);
      expect(scheduler.getIntervals().sort()).toEqual([
        'lost-answers.mark',
        'retention',
        'revoked-list.sync',
        'signing-keys.refresh',
        'signing-keys.rotation-check',
      ]);
    } finally {
      await timed.close();
    }
    expect(scheduler.getIntervals()).toEqual([]);
  });

  it('runs on one instance at a time: while another holds the lock (PostgreSQL), it deletes nothing', async () => {
    const client = await registerClient(t, { trusted: true });
    await db.run(INSERT_JTI, { clientId: client.client_id, jtiHash: 'expired', expiresAt: Date.now() - 1_000 });
    if (!db.postgres) {
      // SQLite is one process's file: no lock to take, the run deletes it.
      expect((await t.app.get(RetentionService).prune()).client_assertion_jtis).toBe(1);
      return;
    }
    const other = new PgClient({ connectionString: t.databaseUrl });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(x'6f61757468707266'::bigint)`);
      expect(await t.app.get(RetentionService).prune()).toEqual({});
      expect(await count(COUNT_JTIS, client.client_id)).toBe(1);
      await other.query(`SELECT pg_advisory_unlock(x'6f61757468707266'::bigint)`);
      expect((await t.app.get(RetentionService).prune()).client_assertion_jtis).toBe(1);
    } finally {
      await other.end();
    }
  });
});
