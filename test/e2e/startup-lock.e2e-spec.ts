import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, type TestDatabase, createTestApp, createTestDatabase } from '../support/test-app';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/** The start-up lock's key (src/database/startup-lock.ts), as another instance would hold it while it migrates. */
const STARTUP_LOCK = `x'6f61757468737663'::bigint`;

/**
 * An instance that starts while another holds the start-up lock (migrating a large table, say) for longer than a
 * query may take while serving: it waits its turn and starts, instead of failing on the client's query timeout
 * (and its three retries). On the suite's PostgreSQL, or on a cluster of its own when the suite runs on SQLite.
 */
describe('the start-up lock held longer than DATABASE_QUERY_TIMEOUT', () => {
  let throwaway: ThrowawayPostgres | undefined;
  let db: TestDatabase;

  beforeAll(async () => {
    if (process.env.TEST_DATABASE_URL) {
      db = await createTestDatabase();
      return;
    }
    throwaway = await ThrowawayPostgres.launch();
    db = { url: throwaway.url, drop: async () => undefined };
  });
  afterAll(async () => {
    await db?.drop();
    throwaway?.destroy();
  });

  it('waits for the lock (8 s against a 1 s query timeout), then migrates and serves', async () => {
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    let app: TestApp | undefined;
    try {
      await holder.query(`SELECT pg_advisory_lock(${STARTUP_LOCK})`);
      let settled: 'started' | 'failed' | undefined;
      const starting = createTestApp({ DATABASE_QUERY_TIMEOUT: '1' }, db).then(
        (started) => {
          settled = 'started';
          app = started;
        },
        (error: unknown) => {
          settled = 'failed';
          throw error;
        },
      );
      // Longer than the query timeout with every retry of the start (3 x (1 s + 1 s delay)).
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      expect(settled).toBeUndefined();
      await holder.query(`SELECT pg_advisory_unlock(${STARTUP_LOCK})`);
      await starting;
      expect(settled).toBe('started');
      const ran = (await app!.app.get(DataSource).query('SELECT name FROM migrations')) as unknown[];
      expect(ran.length).toBe(app!.app.get(DataSource).migrations.length);
      expect((await app!.http().get('/health/ready')).status).toBe(200);
      // Serving keeps its limit: a query longer than DATABASE_QUERY_TIMEOUT fails.
      await expect(app!.app.get(DataSource).query('SELECT pg_sleep(2)')).rejects.toThrow(/timeout/i);
    } finally {
      await app?.close();
      await holder.end();
    }
  });
});
