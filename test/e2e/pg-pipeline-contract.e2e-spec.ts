import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PipelinedConnection } from '../../src/database/pipelined-connection';
import { type TestDatabase, createTestDatabase } from '../support/test-app';

const POSTGRES = Boolean(process.env.TEST_DATABASE_URL);

/**
 * What the service relies on in node-postgres' pipeline mode (`new Client({ pipeline: true })`, documented at
 * node-postgres.com/features/pipelining): a minor version of `pg` that changed one of these would break
 * `SqlRunner`'s single statements on PostgreSQL, and this says so by name.
 */
if (POSTGRES)
  describe('contract: node-postgres pipeline mode, as PipelinedConnection uses it', () => {
    let db: TestDatabase;
    let connection: PipelinedConnection;

    beforeAll(async () => {
      db = await createTestDatabase();
      connection = new PipelinedConnection({ connectionString: db.url });
      await connection.query({ text: 'CREATE TABLE t (id int PRIMARY KEY)' });
    });
    afterAll(async () => {
      await connection.end();
      await db.drop();
    });

    it('sends a query without waiting for the answer to the one before it, and answers each in order', async () => {
      const started = performance.now();
      const answers = await Promise.all([
        connection.query({ text: 'SELECT pg_sleep(0.2), 1 AS n' })!,
        connection.query({ name: 'contract_two', text: 'SELECT $1::int AS n', values: [2] })!,
        connection.query({ name: 'contract_two', text: 'SELECT $1::int AS n', values: [3] })!,
      ]);
      expect(answers.map((answer) => answer.rows[0].n)).toEqual([1, 2, 3]);
      expect(performance.now() - started).toBeLessThan(1_000);
    });

    it('makes each query its own transaction: one that fails fails alone, and the writes before and after it stay', async () => {
      const outcomes = await Promise.allSettled([
        connection.query({ text: 'INSERT INTO t VALUES (1)' })!,
        connection.query({ text: 'INSERT INTO t VALUES (1)' })!, // duplicate key
        connection.query({ text: 'INSERT INTO t VALUES (2)' })!,
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
      expect((await connection.query({ text: 'SELECT id FROM t ORDER BY id' })!).rows).toEqual([{ id: 1 }, { id: 2 }]);
    });

    it('sets the session’s parameters from the `options` connection parameter', async () => {
      const relaxed = new PipelinedConnection({ connectionString: db.url, options: '-c synchronous_commit=off' });
      try {
        expect((await relaxed.query({ text: `SELECT current_setting('synchronous_commit') AS value` })!).rows).toEqual([{ value: 'off' }]);
      } finally {
        await relaxed.end();
      }
    });

    it('answers a new query after the connection was lost, on a new connection', async () => {
      const pid = (await connection.query({ text: 'SELECT pg_backend_pid() AS pid' })!).rows[0].pid as number;
      // Both of the data source's connections are plain clients too: end this one from another session.
      const killer = new PipelinedConnection({ connectionString: db.url });
      await killer.query({ text: 'SELECT pg_terminate_backend($1)', values: [pid] });
      await killer.end();
      // A query sent before the client noticed fails (503 for the service); the next one runs on a new backend.
      await connection.query({ text: 'SELECT 1' })!.catch(() => undefined);
      const again = (await connection.query({ text: 'SELECT pg_backend_pid() AS pid' })!).rows[0].pid as number;
      expect(again).not.toBe(pid);
    });
  });
else
  describe('contract: node-postgres pipeline mode (the rest runs with TEST_DATABASE_URL)', () => {
    it('has a pipeline flag on its client configuration', async () => {
      const pg = await import('pg');
      expect(new pg.default.Client({ pipeline: true }).pipeline).toBe(true);
    });
  });
