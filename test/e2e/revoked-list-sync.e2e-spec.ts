import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RevokedGrantsRepository, type RevokedPage } from '../../src/auth/revoked-grants.repository';
import { PAGE_ROWS, RevokedGrantsService } from '../../src/auth/revoked-grants.service';
import { type TestApp, type TestDatabase, createTestApp, createTestDatabase } from '../support/test-app';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/** The rows another instance's syncs read, call by call (the repository's pages, summed per sync). */
function rowsReadPerSync(t: TestApp): { sync(): Promise<number> } {
  const entries = t.app.get(RevokedGrantsRepository);
  const service = t.app.get(RevokedGrantsService);
  const pageFrom = vi.spyOn(entries, 'pageFrom');
  return {
    async sync() {
      pageFrom.mockClear();
      await service.sync();
      let rows = 0;
      for (const result of pageFrom.mock.results) rows += (await (result.value as Promise<RevokedPage>)).count;
      return rows;
    },
  };
}

/** Two instances of the app on one database of `database()`, for the tests of a describe block. */
function twoInstances(database: () => Promise<TestDatabase>): { db: TestDatabase; a: TestApp; b: TestApp } {
  const on = {} as { db: TestDatabase; a: TestApp; b: TestApp };
  beforeAll(async () => {
    on.db = await database();
    on.a = await createTestApp({}, on.db);
    on.b = await createTestApp({}, on.db);
  });
  afterAll(async () => {
    await on.b?.close();
    await on.a?.close();
    await on.db?.drop();
  });
  return on;
}

/**
 * The revoked list read from a cursor: an instance's sync reads what other instances wrote since its last read and
 * nothing else (no time window read again: with nothing new, no row is read), and misses no entry, even one whose
 * transaction began before and committed after a later one that a sync has already read. On PostgreSQL a cluster of
 * the suite's own: a writing transaction anywhere on the server holds the cursor back (correct, but the syncs then
 * read again what came since), and the other suites write all the time.
 */
describe.each([
  ['SQLite', async () => createTestDatabase('')],
  [
    'PostgreSQL',
    async () => {
      const cluster = await ThrowawayPostgres.launch();
      return { url: cluster.url, drop: async () => cluster.destroy() };
    },
  ],
])('the revoked list between instances (%s)', (_name, database: () => Promise<TestDatabase>) => {
  const on = twoInstances(database);

  it('reads only what is new: the entries written since the last sync, then none', async () => {
    const reads = rowsReadPerSync(on.b);
    const isRevoked = (id: string) => on.b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    await reads.sync();

    const first = [randomUUID(), randomUUID(), randomUUID()];
    await on.a.app.get(RevokedGrantsService).revoke(first);
    expect(first.map(isRevoked)).toEqual([false, false, false]);
    expect(await reads.sync()).toBe(3);
    expect(first.map(isRevoked)).toEqual([true, true, true]);
    expect(await reads.sync()).toBe(0);

    const next = randomUUID();
    await on.a.app.get(RevokedGrantsService).revoke([next]);
    expect(await reads.sync()).toBe(1);
    expect(isRevoked(next)).toBe(true);
    expect(await reads.sync()).toBe(0);
  });

  it('reads a page at a time from where the last page ended, and says where the next sync resumes', async () => {
    const entries = on.b.app.get(RevokedGrantsRepository);
    const now = Date.now();
    const start = { seq: (await entries.pageFrom({ seq: 0, revokedAt: -1, id: '' }, now, 1)).next, revokedAt: -1, id: '' };
    const grants = [randomUUID(), randomUUID(), randomUUID()];
    const subject = `client:${randomUUID()}`;
    await on.a.app.get(RevokedGrantsService).revoke([...grants, subject]);

    const first = await entries.pageFrom(start, now, 3);
    const second = await entries.pageFrom(first.last!, now, 3);
    const third = await entries.pageFrom(second.last!, now, 3);
    expect([first.count, second.count, third.count]).toEqual([3, 1, 0]);
    // Grant ids as lines of a UUID and its expiry (epoch ms); the other entries one by one.
    const lines = `${first.grants}\n${second.grants}`.split('\n').filter(Boolean);
    expect(lines.map((line) => line.slice(0, 36)).sort()).toEqual([...grants].sort());
    expect(lines.every((line) => /^\d{13}$/.test(line.slice(36)))).toBe(true);
    expect([...first.others, ...second.others].map((entry) => entry.id)).toEqual([subject]);
    expect(third).toEqual({ next: third.next, count: 0, grants: '', others: [], last: undefined });
    // Nothing written since: the next sync resumes past them all.
    expect((await entries.pageFrom({ seq: third.next, revokedAt: -1, id: '' }, now, 3)).count).toBe(0);
  });

  it('still reads a revocation written after the retention job deleted every entry (numbers are not handed out again)', async () => {
    const isRevoked = (id: string) => on.b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    const before = randomUUID();
    await on.a.app.get(RevokedGrantsService).revoke([before]);
    await on.b.app.get(RevokedGrantsService).sync();
    expect(isRevoked(before)).toBe(true);

    // What the retention job does once every entry has outlived its tokens.
    await on.a.app.get(DataSource).query('DELETE FROM revoked_grants');
    const after = randomUUID();
    await on.a.app.get(RevokedGrantsService).revoke([after]);
    await on.b.app.get(RevokedGrantsService).sync();
    expect(isRevoked(after)).toBe(true);
  });
});

describe('the revoked list on PostgreSQL: a write that commits after a later one was read', () => {
  const on = twoInstances(() => createTestDatabase(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'));

  it('is read by the sync after its commit', async () => {
    const isRevoked = (id: string) => on.b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    const slow = new Client({ connectionString: on.db.url });
    await slow.connect();
    try {
      // A revocation whose transaction starts first (its id is the lower) and stays open...
      const early = randomUUID();
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO revoked_grants (grant_id, revoked_at, expires_at, change_seq) VALUES ($1, $2, $3, pg_current_xact_id()::text::bigint)`,
        [early, Date.now(), Date.now() + 3_600_000],
      );
      // ...while a later one commits and another instance's sync reads it.
      const late = randomUUID();
      await on.a.app.get(RevokedGrantsService).revoke([late]);
      await on.b.app.get(RevokedGrantsService).sync();
      expect([isRevoked(early), isRevoked(late)]).toEqual([false, true]);

      await slow.query('COMMIT');
      await on.b.app.get(RevokedGrantsService).sync();
      expect([isRevoked(early), isRevoked(late)]).toEqual([true, true]);
    } finally {
      await slow.end();
    }
  });

  it('is read when the writes read meanwhile took several pages', async () => {
    const isRevoked = (id: string) => on.b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    const slow = new Client({ connectionString: on.db.url });
    const other = new Client({ connectionString: on.db.url });
    await Promise.all([slow.connect(), other.connect()]);
    try {
      const early = randomUUID();
      await slow.query('BEGIN');
      await slow.query(`INSERT INTO revoked_grants (grant_id, revoked_at, expires_at) VALUES ($1, $2, $3)`, [
        early,
        Date.now(),
        Date.now() + 3_600_000,
      ]);
      // Two and a half pages committed after it began, read by another instance's sync.
      const { rows } = await other.query<{ id: string }>(
        `INSERT INTO revoked_grants (grant_id, revoked_at, expires_at)
         SELECT gen_random_uuid()::text, $1::bigint, $2::bigint FROM generate_series(1, $3::int) RETURNING grant_id AS id`,
        [Date.now(), Date.now() + 3_600_000, PAGE_ROWS * 2.5],
      );
      await on.b.app.get(RevokedGrantsService).sync();
      expect(isRevoked(early)).toBe(false);
      expect(rows.every((row) => isRevoked(row.id))).toBe(true);

      await slow.query('COMMIT');
      await on.b.app.get(RevokedGrantsService).sync();
      expect(isRevoked(early)).toBe(true);
    } finally {
      await Promise.all([slow.end(), other.end()]);
    }
  });

  it('numbers the writes of an instance of an earlier version, which does not set change_seq (a rolling deploy)', async () => {
    const isRevoked = (id: string) => on.b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    await on.b.app.get(RevokedGrantsService).sync();
    const earlier = new Client({ connectionString: on.db.url });
    await earlier.connect();
    try {
      // The earlier version's upsert, as it was written: no change_seq.
      const upsert = `INSERT INTO revoked_grants (grant_id, revoked_at, expires_at) VALUES ($1, $2, $3)
        ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at, expires_at = excluded.expires_at`;
      const inserted = randomUUID();
      await earlier.query(upsert, [inserted, Date.now(), Date.now() + 3_600_000]);
      await on.b.app.get(RevokedGrantsService).sync();
      expect(isRevoked(inserted)).toBe(true);

      // A whole-subject entry revoked again by it (its time moves on): read again, with the later time.
      const subject = `cc:${randomUUID()}`;
      await earlier.query(upsert, [subject, Date.now() - 60_000, Date.now() + 3_600_000]);
      await on.b.app.get(RevokedGrantsService).sync();
      const issuedNow = Math.floor(Date.now() / 1000);
      expect(on.b.app.get(RevokedGrantsService).isRevoked(subject, issuedNow)).toBe(false);
      await earlier.query(upsert, [subject, Date.now() + 1_000, Date.now() + 3_600_000]);
      await on.b.app.get(RevokedGrantsService).sync();
      expect(on.b.app.get(RevokedGrantsService).isRevoked(subject, issuedNow)).toBe(true);
    } finally {
      await earlier.end();
    }
  });
});
