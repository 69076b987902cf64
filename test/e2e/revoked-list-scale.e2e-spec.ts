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
 * timing bar here (a busy machine moves it): the suite logs when the last of them is refused after their commit, how
 * long the read took by the service's account, the longest event-loop stall, and the CPU an instance spends once it
 * has caught up (figures in docs/revocation.md); that a sync yields while it reads is a unit test of
 * `RevokedGrantsService`.
 */
const ROWS = 1_000_000;
/** The default interval: the promise measured is the one a deployment gets. */
const SYNC_SECONDS = 5;
/** How long an instance with nothing new to read is watched for its CPU time. */
const IDLE_MS = 10_000;
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
  return valueIn(await metricsText(service), name);
}

function valueIn(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Rows PostgreSQL has fetched from the revoked list's table so far (its statistics; none on SQLite). */
async function rowsFetched(db: TestDatabase): Promise<number | undefined> {
  if (db.url.startsWith('sqlite:')) return undefined;
  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    // The statistics a backend sends lag by up to a second: let them arrive.
    await new Promise((r) => setTimeout(r, 1_500));
    const { rows } = await client.query<{ fetched: string }>(
      `SELECT COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) AS fetched FROM pg_stat_user_tables WHERE relname = 'revoked_grants'`,
    );
    return Number(rows[0].fetched);
  } finally {
    await client.end();
  }
}

/** Logs the CPU an instance with nothing new to read spends over {@link IDLE_MS}, and the rows its database reads. */
async function idleFigures(service: RunningService, db: TestDatabase): Promise<void> {
  // One interval more: a sync under way at the refusal ends.
  await new Promise((r) => setTimeout(r, SYNC_SECONDS * 1000));
  const fetchedBefore = await rowsFetched(db);
  const cpuBefore = await metric(service, 'process_cpu_seconds_total');
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const after = await metricsText(service);
  const cpu = valueIn(after, 'process_cpu_seconds_total') - cpuBefore;
  // The longest stall since the last reading (a reading starts a new one), with nothing to read.
  const stall = valueIn(after, 'nodejs_eventloop_lag_max_seconds');
  const fetchedAfter = await rowsFetched(db);
  const fetched = fetchedBefore === undefined ? '' : `, rows read by the database ${fetchedAfter! - fetchedBefore}`;
  console.log(
    `revoked list idle over ${IDLE_MS} ms: CPU ${((cpu * 1000) / IDLE_MS).toFixed(3)} core${fetched}, ` +
      `longest event-loop stall ${(stall * 1000).toFixed(0)} ms`,
  );
}

describe('a million revoked grants', () => {
  let db: TestDatabase;
  let service: RunningService | undefined;
  const env = () => ({
    DATABASE_URL: db.url,
    NODE_OPTIONS: nodeOptions,
    REVOCATION_SYNC_SECONDS: String(SYNC_SECONDS),
    RATE_LIMIT_LOGIN: '100000',
    RATE_LIMIT_TOKEN: '100000',
    // The sync logs how long a large read took (and the access log comes with it).
    LOG_LEVEL: 'info',
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

    const started = Date.now();
    await insertRevokedGrants(db, started, decodeJwt(revoked.access_token).payload.gid as string);
    // The millionth revocation committed when the insert returned.
    const committed = Date.now();
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
      `revoked list: ${ROWS} rows written in ${committed - started} ms, the last refused ${refusedAfter} ms after their commit ` +
        `(sync every ${SYNC_SECONDS} s), longest event-loop stall ${(stall * 1000).toFixed(0)} ms`,
    );
    console.log(
      `revoked list, the service's own account: ${[...service.output().matchAll(/read \d+ revoked-list entries in \d+ ms \(\d+ ms waiting for pages\)/g)].join('; ')}`,
    );
    await idleFigures(service, db);
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
