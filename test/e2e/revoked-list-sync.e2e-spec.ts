import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RevokedGrantsRepository } from '../../src/auth/revoked-grants.repository';
import { RevokedGrantsService } from '../../src/auth/revoked-grants.service';
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
      for (const result of pageFrom.mock.results) rows += (await (result.value as Promise<unknown[]>)).length;
      return rows;
    },
  };
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
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await database();
    a = await createTestApp({}, db);
    b = await createTestApp({}, db);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  it('reads only what is new: the entries written since the last sync, then none', async () => {
    const reads = rowsReadPerSync(b);
    const isRevoked = (id: string) => b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    await reads.sync();

    const first = [randomUUID(), randomUUID(), randomUUID()];
    await a.app.get(RevokedGrantsService).revoke(first);
    expect(first.map(isRevoked)).toEqual([false, false, false]);
    expect(await reads.sync()).toBe(3);
    expect(first.map(isRevoked)).toEqual([true, true, true]);
    expect(await reads.sync()).toBe(0);

    const next = randomUUID();
    await a.app.get(RevokedGrantsService).revoke([next]);
    expect(await reads.sync()).toBe(1);
    expect(isRevoked(next)).toBe(true);
    expect(await reads.sync()).toBe(0);
  });
});

describe('the revoked list on PostgreSQL: a write that commits after a later one was read', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    a = await createTestApp({}, db);
    b = await createTestApp({}, db);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  it('is read by the sync after its commit', async () => {
    const isRevoked = (id: string) => b.app.get(RevokedGrantsService).isRevoked(id, Math.floor(Date.now() / 1000));
    const slow = new Client({ connectionString: db.url });
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
      await a.app.get(RevokedGrantsService).revoke([late]);
      await b.app.get(RevokedGrantsService).sync();
      expect([isRevoked(early), isRevoked(late)]).toEqual([false, true]);

      await slow.query('COMMIT');
      await b.app.get(RevokedGrantsService).sync();
      expect([isRevoked(early), isRevoked(late)]).toEqual([true, true]);
    } finally {
      await slow.end();
    }
  });
});
