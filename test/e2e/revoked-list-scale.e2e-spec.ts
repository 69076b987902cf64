import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Driver, demoFrom } from '../support/live-service';
import { decodeJwt } from '../support/oauth';
import { ROOT, type RunningService, buildOnce, startService } from '../support/service-process';
import { type TestDatabase, createTestDatabase } from '../support/test-app';

/**
 * A million revoked grants within the access tokens' lifetime (a mass revocation, one grant at a time), under the
 * heap limit `npm start` sets: the service reads them, keeps serving, and starts again with them on the list. No
 * timing bar here (a busy machine moves it): the suite logs the longest event-loop stall (23-118 ms measured; the
 * old full reload, in one piece, stalled 1.9 s at 50,000); that a sync yields between its pages is a unit test of
 * `RevokedGrantsService`.
 */
const ROWS = 1_000_000;
const { nodeOptions } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).config as { nodeOptions: string };
/** The old-space limit `npm start` sets, in bytes. */
const HEAP_LIMIT = Number(/--max-old-space-size=(\d+)/.exec(nodeOptions)![1]) * 1024 * 1024;

/**
 * Inserts `ROWS` revoked grants (random UUIDs, revoked in the last minutes, live for 15 more) straight into the
 * database, then `last` (a grant whose token the test holds), numbered after them as the service numbers its writes.
 */
async function insertRevokedGrants(db: TestDatabase, now: number, last: string): Promise<void> {
  const expiresAt = now + 15 * 60_000;
  if (db.url.startsWith('sqlite:')) {
    const sqlite = new Database(db.url.slice('sqlite:'.length), { timeout: 30_000 });
    // Numbered after the highest entry, as the service numbers its writes on SQLite (change_seq).
    const { highest } = sqlite.prepare('SELECT COALESCE(MAX(change_seq), 0) AS highest FROM revoked_grants').get() as { highest: number };
    sqlite
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO revoked_grants (grant_id, revoked_at, expires_at, change_seq)
         SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-7' || substr(hex(randomblob(2)), 2) || '-' ||
                hex(randomblob(2)) || '-' || hex(randomblob(6))), ? - 300000 + i / 10, ?, ? + i FROM n`,
      )
      .run(ROWS, now, expiresAt, highest);
    sqlite
      .prepare('INSERT INTO revoked_grants (grant_id, revoked_at, expires_at, change_seq) VALUES (?, ?, ?, ?)')
      .run(last, now, expiresAt, highest + ROWS + 1);
    sqlite.close();
    return;
  }
  const client = new Client({ connectionString: db.url });
  await client.connect();
  await client.query(
    `INSERT INTO revoked_grants (grant_id, revoked_at, expires_at, change_seq)
     SELECT gen_random_uuid()::text, $2::bigint - 300000 + i / 10, $3::bigint, pg_current_xact_id()::text::bigint
     FROM generate_series(1, $1::int) i`,
    [ROWS, now, expiresAt],
  );
  await client.query(
    'INSERT INTO revoked_grants (grant_id, revoked_at, expires_at, change_seq) VALUES ($1, $2, $3, pg_current_xact_id()::text::bigint)',
    [last, now, expiresAt],
  );
  await client.end();
}

/** GET /metrics on a connection of its own (no race with the server closing an idle kept-alive one). */
function metricsText(service: RunningService): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get(`${service.baseUrl}/metrics`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
      res.on('error', reject);
    });
    req.on('error', (error) =>
      reject(new Error(`GET /metrics failed (${String(error)}); exit code ${service.child.exitCode}:\n${service.output().slice(-3000)}`)),
    );
  });
}

async function metric(service: RunningService, name: string): Promise<number> {
  const text = await metricsText(service);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a million revoked grants', () => {
  let db: TestDatabase;
  let service: RunningService | undefined;
  const env = () => ({
    DATABASE_URL: db.url,
    NODE_OPTIONS: nodeOptions,
    REVOCATION_SYNC_SECONDS: '1',
    RATE_LIMIT_LOGIN: '100000',
    RATE_LIMIT_TOKEN: '100000',
    LOG_LEVEL: 'warn',
  });
  const stop = async () => {
    service?.child.kill('SIGTERM');
    await service?.exit;
    service = undefined;
  };

  beforeAll(async () => {
    buildOnce();
    db = await createTestDatabase();
  }, 120_000);
  afterAll(async () => {
    await stop();
    await db?.drop();
  });

  it('are read without stalling the service, under its heap limit, and are still on the list after a restart', async () => {
    service = await startService(env());
    const driver = new Driver(service.baseUrl, demoFrom(service.output()));
    const revoked = await driver.step();
    const kept = await driver.step();
    const resource = (token: string) => fetch(`${service!.baseUrl}/api/resource`, { headers: { authorization: `Bearer ${token}` } });
    const externalBefore = await metric(service, 'nodejs_external_memory_bytes');

    const committed = Date.now();
    await insertRevokedGrants(db, committed, decodeJwt(revoked.access_token).payload.gid as string);
    // The next syncs read them, the revoked token's grant last: its token is refused once they are all in.
    let stall = 0;
    let refusedAfter: number | undefined;
    const deadline = Date.now() + 60_000;
    while (refusedAfter === undefined && Date.now() < deadline) {
      stall = Math.max(stall, await metric(service, 'nodejs_eventloop_lag_max_seconds'));
      if ((await resource(revoked.access_token)).status === 401) refusedAfter = Date.now() - committed;
      else await new Promise((r) => setTimeout(r, 100));
    }
    stall = Math.max(stall, await metric(service, 'nodejs_eventloop_lag_max_seconds'));
    const external = await metric(service, 'nodejs_external_memory_bytes');
    console.log(
      `revoked list: ${ROWS} rows read, the last refused ${refusedAfter} ms after their commit, longest event-loop stall ${(stall * 1000).toFixed(0)} ms`,
    );
    expect(refusedAfter).toBeDefined();
    // The grant table outside the heap holds them all: 20 MB or more.
    expect(external - externalBefore).toBeGreaterThanOrEqual(20_000_000);
    expect((await resource(kept.access_token)).status).toBe(200);
    expect(service.child.exitCode).toBeNull();
    expect(await metric(service, 'nodejs_heap_size_used_bytes')).toBeLessThan(HEAP_LIMIT);

    // The list works at that size: one more revocation counts, a token of another grant still does.
    const revocation = await fetch(`${service.baseUrl}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: driver.basicAuthorization },
      body: new URLSearchParams({ token: revoked.refresh_token }),
    });
    expect(revocation.status).toBe(200);
    expect((await resource(revoked.access_token)).status).toBe(401);
    expect((await resource(kept.access_token)).status).toBe(200);

    // A restart reads the whole list before it serves, within the same heap limit.
    const port = Number(new URL(service.baseUrl).port);
    await stop();
    service = await startService(env(), port);
    expect((await resource(revoked.access_token)).status).toBe(401);
    expect((await resource(kept.access_token)).status).toBe(200);
    expect(await metric(service, 'nodejs_heap_size_used_bytes')).toBeLessThan(HEAP_LIMIT);
    expect(service.output()).not.toMatch(/heap out of memory/);
  }, 240_000);
});
