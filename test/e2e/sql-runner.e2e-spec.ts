import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionHost } from '@nestjs-cls/transactional';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { handlesOf } from '../../src/database/connections';
import type { Transactions } from '../../src/database/transactions';
import { SqlRunner, Statement } from '../../src/database/sql';
import { captureQueries } from '../support/queries';
import { type TestApp, createTestApp } from '../support/test-app';

const POSTGRES = Boolean(process.env.TEST_DATABASE_URL);

const INSERT = new Statement(`INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)
  VALUES (:id, :at, 'test.event', 'test', NULL, NULL, NULL, NULL, NULL)`);
const INSERT_WITHOUT_TYPE = new Statement(`INSERT INTO audit_events (id, at, type, actor) VALUES (:id, 0, NULL, 'test')`);
const COUNT = new Statement(`SELECT COUNT(*) AS n FROM audit_events WHERE id = :id`);
const SYNCHRONOUS_COMMIT = `SELECT current_setting('synchronous_commit') AS value`;
const SETTING = new Statement(SYNCHRONOUS_COMMIT);

describe('SqlRunner: the hot paths on the data source’s own connections', () => {
  let t: TestApp;
  let db: SqlRunner;
  let dataSource: DataSource;
  let transactions: Transactions;
  /**
   * `work` as another request would run it, in an async context of its own (made here, outside any unit), once
   * `open()` is called (from inside a unit).
   */
  const anotherRequest = <T>(work: () => Promise<T>) => {
    let open!: () => void;
    const done = new Promise<void>((resolve) => (open = resolve)).then(work);
    return { open, done };
  };

  beforeAll(async () => {
    t = await createTestApp();
    db = t.app.get(SqlRunner);
    dataSource = t.app.get(DataSource);
    transactions = t.app.get<Transactions>(TransactionHost);
  });
  afterAll(() => t.close());

  const exists = async (id: string) => Number((await db.one<{ n: number | string }>(COUNT, { id }))!.n) === 1;

  it('finds the PostgreSQL pool through TypeORM’s documented driver option', () => {
    expect(handlesOf(dataSource).pool !== undefined).toBe(POSTGRES);
  });

  it('a write of another caller made while a unit of work awaits stays when that unit rolls back', async () => {
    const mine = randomUUID();
    const theirs = randomUUID();
    const written = anotherRequest(() => db.run(INSERT, { id: mine, at: Date.now() }));
    await expect(
      transactions.withTransaction(async () => {
        await db.run(INSERT, { id: theirs, at: Date.now() });
        // Another request's write comes in while the unit awaits between its statements.
        written.open();
        await sleep(30);
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    await written.done;
    expect(await exists(theirs)).toBe(false);
    expect(await exists(mine)).toBe(true);
  });

  it('a TypeORM entity write made while a unit of work awaits does not join it either', async () => {
    const mine = randomUUID();
    const written = anotherRequest(() =>
      dataSource.getRepository(AuditEvent).insert({ id: mine, at: Date.now(), type: 'test.event', actor: 'test' }),
    );
    await expect(
      transactions.withTransaction(async () => {
        await db.run(INSERT, { id: randomUUID(), at: Date.now() });
        written.open();
        await sleep(30);
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    await written.done;
    expect(await exists(mine)).toBe(true);
  });

  it('every repository call inside a unit of work joins it: all or none', async () => {
    const [viaSql, viaEntity] = [randomUUID(), randomUUID()];
    await expect(
      transactions.withTransaction(async () => {
        await db.run(INSERT, { id: viaSql, at: Date.now() });
        await transactions.tx.getRepository(AuditEvent).insert({ id: viaEntity, at: Date.now(), type: 'test.event', actor: 'test' });
        expect(await exists(viaSql)).toBe(true);
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    expect(await exists(viaSql)).toBe(false);
    expect(await exists(viaEntity)).toBe(false);
  });

  it('a transaction opened outside the transaction API is refused on SQLite (it would share the one connection)', async () => {
    const id = randomUUID();
    const opened = dataSource.transaction((manager) =>
      manager.getRepository(AuditEvent).insert({ id, at: Date.now(), type: 'test.event', actor: 'test' }),
    );
    if (POSTGRES) await expect(opened).resolves.toBeDefined();
    else
      await expect(opened).rejects.toThrow('On SQLite a transaction is opened through the transaction API (Transactions.withTransaction)');
    expect(await exists(id)).toBe(POSTGRES);
  });

  it('atomic writes go all or none', async () => {
    const id = randomUUID();
    await expect(
      db.atomic([
        { statement: INSERT, params: { id, at: Date.now() } },
        { statement: INSERT_WITHOUT_TYPE, params: { id: randomUUID() } }, // NOT NULL: fails
      ]),
    ).rejects.toThrow();
    expect(await exists(id)).toBe(false);
    const other = randomUUID();
    expect(await db.atomic([{ statement: INSERT, params: { id: other, at: Date.now() } }])).toEqual([1]);
    expect(await exists(other)).toBe(true);
  });

  it('onlyIfChanged skips a write when the one before it changed nothing', async () => {
    const id = randomUUID();
    const update = new Statement(`UPDATE audit_events SET actor = 'x' WHERE id = :id`);
    expect(
      await db.atomic([
        { statement: update, params: { id: randomUUID() } },
        { statement: INSERT, params: { id, at: Date.now() }, onlyIfChanged: true },
      ]),
    ).toEqual([0, 0]);
    expect(await exists(id)).toBe(false);
  });

  it('writes of several callers in one turn: each all or none, a failing one undoes only its own', async () => {
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const outcomes = await Promise.allSettled([
      db.atomic([
        { statement: INSERT, params: { id: a, at: Date.now() } },
        { statement: INSERT, params: { id: b, at: Date.now() } },
      ]),
      db.atomic([
        { statement: INSERT, params: { id: c, at: Date.now() } },
        { statement: INSERT_WITHOUT_TYPE, params: { id: randomUUID() } }, // NOT NULL: fails
      ]),
      db.run(INSERT_WITHOUT_TYPE, { id: randomUUID() }),
      db.run(INSERT, { id: d, at: Date.now() }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: [1, 1] });
    expect(outcomes[3]).toMatchObject({ status: 'fulfilled', value: { affected: 1 } });
    expect(await exists(a)).toBe(true);
    expect(await exists(b)).toBe(true);
    expect(await exists(c)).toBe(false);
    expect(await exists(d)).toBe(true);
  });

  it('units that wait for SQLite’s connection share one commit (PostgreSQL: one each), each all or none', async () => {
    const ids = Array.from({ length: 5 }, () => randomUUID());
    let outcomes: PromiseSettledResult<number[]>[] = [];
    const queries = await captureQueries(t, async () => {
      outcomes = await Promise.allSettled(
        ids.map((id, i) =>
          db.atomic([
            { statement: INSERT, params: { id, at: Date.now() } },
            i === 2
              ? { statement: INSERT_WITHOUT_TYPE, params: { id: randomUUID() } }
              : { statement: INSERT, params: { id: randomUUID(), at: Date.now() } },
          ]),
        ),
      );
    });
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(await Promise.all(ids.map(exists))).toEqual([true, true, false, true, true]);
    expect(queries.filter((query) => /^COMMIT/i.test(query.sql))).toHaveLength(POSTGRES ? 4 : 1);
  });

  it('a write is committed when its promise resolves: another connection reads it', async () => {
    const id = randomUUID();
    await db.run(INSERT, { id, at: Date.now() });
    if (POSTGRES) {
      const other = new pg.Client({ connectionString: t.databaseUrl });
      await other.connect();
      try {
        expect((await other.query('SELECT COUNT(*)::int AS n FROM audit_events WHERE id = $1', [id])).rows).toEqual([{ n: 1 }]);
      } finally {
        await other.end();
      }
    } else {
      const other = new Database(t.databaseUrl.slice('sqlite:'.length), { readonly: true });
      try {
        expect(other.prepare('SELECT COUNT(*) AS n FROM audit_events WHERE id = ?').get(id)).toEqual({ n: 1 });
      } finally {
        other.close();
      }
    }
  });

  it('commits every write as the server does by default (never without waiting for its WAL flush), read at once', async () => {
    const id = randomUUID();
    await db.run(INSERT, { id, at: Date.now() });
    expect(await exists(id)).toBe(true);
    if (POSTGRES) {
      const other = new pg.Client({ connectionString: t.databaseUrl });
      await other.connect();
      try {
        const serverDefault = (await other.query(SYNCHRONOUS_COMMIT)).rows[0].value as string;
        expect(serverDefault).not.toBe('off');
        for (let i = 0; i < 4; i++) expect(await db.one(SETTING)).toEqual({ value: serverDefault });
      } finally {
        await other.end();
      }
    }
  });
});
