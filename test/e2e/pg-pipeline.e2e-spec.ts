import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PgPipeline } from '../../src/database/pg-pipeline';
import { serverPort } from '../support/service-process';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/**
 * The pipeline of the PostgreSQL hot paths (src/database/pg-pipeline.ts) on a real server of the test's own (on both
 * CI runs, like the outage suite): a table and a pool per test, its connections named after it.
 */
describe('PgPipeline', () => {
  const name = `pipeline_test_${randomBytes(6).toString('hex')}`;
  let server: ThrowawayPostgres;
  let url: string;
  let admin: Pool;
  let pool: Pool;
  let statements = 0;

  /**
   * The pipeline under test. A batch waits up to 20 ms for more queries of a long turn (0.2 ms in the service): the
   * queries a test sends in one turn go together however busy the machine is.
   */
  let pipeline: PgPipeline;
  const MAX_BATCH_WAIT_MS = 20;

  /** A named statement, as SqlRunner sends it (each name is prepared once per connection). */
  const query = (text: string, values: unknown[] = []) => pipeline.query({ name: `${name}_${++statements}`, text, values });
  const same = (text: string) => {
    const statement = `${name}_${++statements}`;
    return (values: unknown[] = []) => pipeline.query({ name: statement, text, values });
  };
  const backends = async () =>
    (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [name])).rows.map((r) => r.pid);
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  beforeAll(async () => {
    server = new ThrowawayPostgres(await serverPort());
    server.init();
    server.start();
    url = server.url;
  }, 120_000);
  afterAll(() => server?.destroy());

  beforeEach(async () => {
    admin = new Pool({ connectionString: url, max: 1 });
    await admin.query(`CREATE TABLE ${name} (id integer PRIMARY KEY)`);
    pool = new Pool({ connectionString: url, application_name: name, max: 2 });
    pipeline = new PgPipeline(pool, { maxBatchWaitMs: MAX_BATCH_WAIT_MS });
  });
  afterEach(async () => {
    await pool.end().catch(() => undefined);
    await admin.query(`DROP TABLE IF EXISTS ${name}`);
    await admin.end();
  });

  it("answers each query of a turn with its own rows, and the next turn's, all on one connection of its own", async () => {
    const pidAnd = same('SELECT $1::int AS n, pg_backend_pid() AS pid');
    const first = await Promise.all(Array.from({ length: 20 }, (_, n) => pidAnd([n])));
    expect(first.map((r) => r.rows[0].n)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    expect(new Set(first.map((r) => r.rows[0].pid)).size).toBe(1);

    await nextTurn();
    const second = await Promise.all([pidAnd([100]), pidAnd([101])]);
    expect(second.map((r) => r.rows[0].n)).toEqual([100, 101]);
    expect(second.map((r) => r.rows[0].pid)).toEqual([first[0].rows[0].pid, first[0].rows[0].pid]);
    // The pipeline's connection, none of the pool's own.
    expect(await backends()).toEqual([first[0].rows[0].pid]);
  });

  it('fails a failing statement alone: the others of its turn run and stay committed', async () => {
    const insert = same(`INSERT INTO ${name} (id) VALUES ($1) RETURNING id`);
    const results = await Promise.allSettled([insert([1]), insert([2]), insert([1]), insert([3])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    const seen = await admin.query<{ id: number }>(`SELECT id FROM ${name} ORDER BY id`);
    expect(seen.rows.map((r) => r.id)).toEqual([1, 2, 3]);
  });

  it("runs a turn's statements in one transaction, each answered with its own rows once it has committed", async () => {
    const insert = same(`INSERT INTO ${name} (id) VALUES ($1) RETURNING id, txid_current()::text AS tx`);
    const results = await Promise.all([insert([1]), insert([2]), insert([3])]);
    expect(results.map((r) => r.rows)).toEqual([1, 2, 3].map((id) => [{ id, tx: results[0].rows[0].tx }]));
    expect(results.map((r) => [r.command, r.rowCount])).toEqual(Array(3).fill(['INSERT', 1]));
    // Committed by the time they answer: another connection sees all three.
    const seen = await admin.query<{ id: number }>(`SELECT id FROM ${name} ORDER BY id`);
    expect(seen.rows.map((r) => r.id)).toEqual([1, 2, 3]);

    await nextTurn();
    const next = await insert([4]);
    expect(next.rows[0].tx).not.toBe(results[0].rows[0].tx);
  });

  it("sends a long turn's batch once a query joins it the longest wait after its first; the queries after go in the next", async () => {
    const tx = same('SELECT txid_current()::text AS tx');
    const early = tx();
    const until = performance.now() + 2 * MAX_BATCH_WAIT_MS;
    while (performance.now() < until); // a long turn, as signing many tokens makes one
    const late = [tx(), tx()];
    const [a, b, c] = await Promise.all([early, ...late]);
    expect(a.rows[0].tx).toBe(b.rows[0].tx);
    expect(c.rows[0].tx).not.toBe(a.rows[0].tx);
  });

  it('runs a statement whose Parse is in an earlier batch not answered yet unnamed: it succeeds when that batch fails', async () => {
    await admin.query(`INSERT INTO ${name} (id) VALUES (1)`);
    const insert = same(`INSERT INTO ${name} (id) VALUES ($1) RETURNING id`);
    const fresh = same('SELECT $1::int AS n');
    // The connection is not open yet: both batches go out once it is, the second before the first is answered.
    const first = Promise.allSettled([insert([1]), fresh([1])]);
    await nextTurn();
    const second = Promise.allSettled([fresh([2])]);
    const [inserted, read] = await first;
    expect(inserted).toMatchObject({ status: 'rejected', reason: { code: '23505' } });
    expect(read).toMatchObject({ status: 'fulfilled', value: { rows: [{ n: 1 }] } });
    expect(await second).toMatchObject([{ status: 'fulfilled', value: { rows: [{ n: 2 }] } }]);
    // And it is prepared for good on the connection afterwards.
    await nextTurn();
    expect((await fresh([3])).rows).toEqual([{ n: 3 }]);
  });

  it('reads rows the same way when a statement runs again on its connection (without asking for its columns again)', async () => {
    const read = same(`SELECT $1::int AS n, $2::text AS label, NULL::int AS nothing, $3::boolean AS flag, $4::bigint AS big`);
    const write = same(`UPDATE ${name} SET id = id WHERE id < 0`);
    for (let turn = 0; turn < 3; turn++) {
      await nextTurn();
      const [rows, updated] = await Promise.all([read([turn, `t${turn}`, turn % 2 === 0, '9007199254740993']), write()]);
      expect(rows.rows).toEqual([{ n: turn, label: `t${turn}`, nothing: null, flag: turn % 2 === 0, big: '9007199254740993' }]);
      expect(rows.fields.map((f) => f.name)).toEqual(['n', 'label', 'nothing', 'flag', 'big']);
      expect([updated.command, updated.rowCount, updated.rows]).toEqual(['UPDATE', 0, []]);
    }
  });

  it('answers a failing first statement with its error; the rest of its turn, rolled back with it, runs again and commits', async () => {
    await admin.query(`INSERT INTO ${name} (id) VALUES (1)`);
    const insert = same(`INSERT INTO ${name} (id) VALUES ($1) RETURNING id`);
    const results = await Promise.allSettled([insert([1]), insert([2]), insert([3])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    const seen = await admin.query<{ id: number }>(`SELECT id FROM ${name} ORDER BY id`);
    expect(seen.rows.map((r) => r.id)).toEqual([1, 2, 3]);
  });

  it('runs a batch PostgreSQL aborts as a deadlock again, each statement on its own: all of it ends committed', async () => {
    await admin.query(`INSERT INTO ${name} (id) VALUES (1), (2)`);
    const touch = same(`UPDATE ${name} SET id = id WHERE id = $1 RETURNING id`);
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      // The other transaction holds row 2, and checks for deadlocks last: the batch is the one aborted.
      await locker.query('BEGIN');
      await locker.query("SET LOCAL deadlock_timeout = '10s'");
      await locker.query(`UPDATE ${name} SET id = id WHERE id = 2`);
      // The batch takes row 1, then waits for row 2; the other transaction then waits for row 1.
      const batch = Promise.allSettled([touch([1]), touch([2])]);
      const waiting = async () =>
        (await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [name])).rowCount;
      for (let i = 0; i < 250 && !(await waiting()); i++) await sleep(20);
      expect(await waiting()).toBe(1);
      await locker.query(`UPDATE ${name} SET id = id WHERE id = 1`);
      await locker.query('COMMIT');
      const results = await batch;
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
      expect(results.map((r) => (r as PromiseFulfilledResult<{ rows: unknown[] }>).value.rows)).toEqual([[{ id: 1 }], [{ id: 2 }]]);
    } finally {
      await locker.end();
    }
  });

  it('fails a statement whose value PostgreSQL cannot take before anything is sent, and runs the others of its turn', async () => {
    const insert = same(`INSERT INTO ${name} (id) VALUES ($1) RETURNING id`);
    const unmappable = {
      toPostgres: () => {
        throw new Error('no text form');
      },
    };
    const results = await Promise.allSettled([insert([1]), insert([unmappable]), insert([2])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'no text form' });
    const seen = await admin.query<{ id: number }>(`SELECT id FROM ${name} ORDER BY id`);
    expect(seen.rows.map((r) => r.id)).toEqual([1, 2]);
  });

  it('opens a new connection after one is lost, and the statements run on it', async () => {
    const pid = (await query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    for (let i = 0; i < 50 && (await backends()).includes(pid); i++) await sleep(20);

    const pids = new Set<number>();
    const insert = same(`INSERT INTO ${name} (id) VALUES ($1) RETURNING pg_backend_pid() AS pid`);
    for (let turn = 0; turn < 4; turn++) {
      await nextTurn();
      const rows = await Promise.all([insert([turn * 2]), insert([turn * 2 + 1])]);
      for (const r of rows) pids.add(r.rows[0].pid);
    }
    expect(pids.has(pid)).toBe(false);
    expect(pids.size).toBe(1);
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${name}`)).rows[0].n).toBe(8);
  });

  it('sends a query to the pool while its connection has 32 in flight behind a row lock, and the 32 run once it is released', async () => {
    await admin.query(`INSERT INTO ${name} (id) VALUES (1)`);
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT id FROM ${name} WHERE id = 1 FOR UPDATE`);
      const update = same(`UPDATE ${name} SET id = id WHERE id = 1 RETURNING pg_backend_pid() AS pid`);
      let settled = 0;
      const held = Array.from({ length: 32 }, () => update().finally(() => settled++));
      const free = query('SELECT pg_backend_pid() AS pid');
      const timeout = sleep(5_000).then(() => 'still waiting');
      const answer = await Promise.race([free, timeout]);
      expect(answer).toMatchObject({ rows: [{ pid: expect.any(Number) }] });
      expect(settled).toBe(0);

      await locker.query('COMMIT');
      const updated = await Promise.all(held);
      expect(updated.map((r) => r.rowCount)).toEqual(Array(32).fill(1));
      expect(new Set(updated.map((r) => r.rows[0].pid)).size).toBe(1);
      expect((answer as Awaited<typeof free>).rows[0].pid).not.toBe(updated[0].rows[0].pid);
    } finally {
      await locker.end();
    }
  });

  it("closes its connections when the pool ends, and later queries fail as the pool's do", async () => {
    await Promise.all([query('SELECT 1'), query('SELECT 2')]);
    await nextTurn();
    await query('SELECT 3');
    await pool.query('SELECT 4');
    expect((await backends()).length).toBe(2);

    await pool.end();
    // A backend leaves pg_stat_activity a moment after its client has gone.
    for (let i = 0; i < 50 && (await backends()).length > 0; i++) await sleep(20);
    expect(await backends()).toEqual([]);
    await expect(query('SELECT 5')).rejects.toThrow(/after calling end on the pool/);
  });
});
