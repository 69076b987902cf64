import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';
import { SqlRunner, sql } from './sql';
import { type SqliteConnection, SqliteGroupCommit } from './sqlite-group-commit';

/** Real SQLite files, two connections to each: what one commits, the other sees; what it has not, the other does not. */
describe('SqliteGroupCommit', () => {
  let dir: string;
  let file: string;
  let db: Database.Database;
  let other: Database.Database;
  let group: SqliteGroupCommit;

  const open = (path: string) => {
    const connection = new Database(path, { timeout: 2_000 });
    connection.pragma('journal_mode = WAL');
    connection.pragma('foreign_keys = ON');
    return connection;
  };
  /** Work for a group: its own statements (what others prepare commits the open batch first). */
  const insert =
    (id: number, on: SqliteGroupCommit = group) =>
    () =>
      on.statement('INSERT INTO items (id) VALUES (?)').run(id).changes;
  const seenByOther = () => other.prepare('SELECT id FROM items ORDER BY id').pluck().all() as number[];
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
    file = join(dir, 'db.sqlite');
    db = open(file);
    db.exec(`CREATE TABLE parents (id INTEGER PRIMARY KEY);
      CREATE TABLE items (id INTEGER PRIMARY KEY,
        parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)`);
    other = open(file);
    group = SqliteGroupCommit.of(db as unknown as SqliteConnection);
  });
  afterEach(() => {
    db.close();
    other.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits the writes of one turn of the event loop together, and answers each only once they are committed', async () => {
    const answered: Array<[number, number[]]> = [];
    const writes = [1, 2, 3].map((id) => group.run(insert(id), true).then((changes) => answered.push([changes, seenByOther()])));
    // Queued: nothing written, no lock taken, until the turn's I/O callbacks are done.
    expect(db.inTransaction).toBe(false);
    expect(seenByOther()).toEqual([]);
    await Promise.all(writes);
    expect(answered).toEqual([
      [1, [1, 2, 3]],
      [1, [1, 2, 3]],
      [1, [1, 2, 3]],
    ]);
    expect(db.inTransaction).toBe(false);
  });

  it('keeps a batch open while the next turns bring more writes, so that they share its commit', async () => {
    const first = group.run(insert(1), true).then(() => seenByOther());
    await nextTurn();
    // The turn of the first write is over: not committed yet, the batch waits for what the next turn brings.
    expect(seenByOther()).toEqual([]);
    const second = group.run(insert(2), true).then(() => seenByOther());
    await expect(first).resolves.toEqual([1, 2]);
    await expect(second).resolves.toEqual([1, 2]);
  });

  it('commits a batch after at most two more turns, even while every turn brings another write', async () => {
    const seen: number[][] = [];
    const writes = [group.run(insert(1), true).then(() => seen.push(seenByOther()))];
    for (let id = 2; id <= 6; id++) {
      await nextTurn();
      writes.push(group.run(insert(id), true).then(() => seen.push(seenByOther())));
    }
    await Promise.all(writes);
    // The first batch: the writes of the first write's turn and of the two turns after it.
    expect(seen[0]).toEqual([1, 2, 3]);
    expect(seenByOther()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('commits a lone write one empty turn after its own', async () => {
    let committed = false;
    const write = group.run(insert(1), true).then(() => (committed = true));
    await nextTurn();
    expect(committed).toBe(false);
    await nextTurn();
    expect(committed).toBe(true);
    await write;
  });

  it('commits a later batch after another use of the connection flushed the one before it', async () => {
    const first = group.run(insert(1), true);
    db.prepare('SELECT 1').get(); // commits the first write at once; the end of its turn finds nothing left to do
    await first;
    await nextTurn();
    const second = group.run(insert(2), true).then(() => 'committed');
    const stuck = new Promise((resolve) => setTimeout(resolve, 1_000, 'not committed after 1 s'));
    await expect(Promise.race([second, stuck])).resolves.toBe('committed');
    expect(seenByOther()).toEqual([1, 2]);
  });

  it('fails only the statement that failed; the others of its batch are committed', async () => {
    const results = await Promise.allSettled([group.run(insert(1), true), group.run(insert(1), true), group.run(insert(2), true)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(seenByOther()).toEqual([1, 2]);
  });

  it('fails every caller of a batch whose COMMIT fails, and keeps none of its writes', async () => {
    const orphan = () => group.statement('INSERT INTO items (id, parent) VALUES (?, ?)').run(3, 99).changes;
    const results = await Promise.allSettled([group.run(insert(1), true), group.run(orphan, true)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' });
    expect(seenByOther()).toEqual([]);
    expect(db.inTransaction).toBe(false);
  });

  it('answers a read at once, from what is committed: not from writes still queued', async () => {
    const count = () => group.statement('SELECT count(*) AS n FROM items').all()[0];
    const write = group.run(insert(1), true);
    await expect(group.run(count, false)).resolves.toEqual({ n: 0 });
    await write;
    await expect(group.run(count, false)).resolves.toEqual({ n: 1 });
  });

  it('commits the queued writes before anyone else uses the connection (an ORM statement, exec, a transaction of its own)', async () => {
    const write = group.run(insert(1), true);
    db.prepare('SELECT 1').get();
    expect(seenByOther()).toEqual([1]);
    await write;

    const second = group.run(insert(2), true);
    db.exec('BEGIN');
    expect(seenByOther()).toEqual([1, 2]);
    db.exec('INSERT INTO items (id) VALUES (3)');
    // Inside someone else's transaction a statement is part of it, and answers at once.
    await expect(group.run(insert(4), true)).resolves.toBe(1);
    db.exec('COMMIT');
    await second;
    expect(seenByOther()).toEqual([1, 2, 3, 4]);
  });

  it('does not deadlock two connections of one process writing in the same turn', async () => {
    const third = open(file);
    try {
      const thirdGroup = SqliteGroupCommit.of(third as unknown as SqliteConnection);
      const writes = [group.run(insert(1), true), thirdGroup.run(insert(2, thirdGroup), true), group.run(insert(3), true)];
      await expect(Promise.all(writes)).resolves.toEqual([1, 1, 1]);
      expect(seenByOther()).toEqual([1, 2, 3]);

      // A write inside a transaction of someone else on one connection, while the other has writes queued: the
      // queue is committed first, so neither waits for a lock the other holds (2 s busy timeout: a deadlock fails).
      db.exec('BEGIN');
      const queued = thirdGroup.run(insert(4, thirdGroup), true);
      await expect(group.run(insert(5), true)).resolves.toBe(1);
      db.exec('COMMIT');
      await expect(queued).resolves.toBe(1);
      expect(seenByOther()).toEqual([1, 2, 3, 4, 5]);
    } finally {
      third.close();
    }
  });

  it("lets the application's data source start a transaction while writes are queued, with statements TypeORM cached before", async () => {
    const dataSource = new DataSource(await dataSourceOptions({ database: { kind: 'sqlite', file: join(dir, 'app.sqlite') } }));
    await dataSource.initialize();
    try {
      // TypeORM prepares and caches BEGIN TRANSACTION / COMMIT here, before any hot statement ran.
      await dataSource.transaction((manager) => manager.query('CREATE TABLE notes (id INTEGER PRIMARY KEY)'));
      const hot = new SqlRunner(dataSource);
      const write = hot.run(sql`INSERT INTO notes (id) VALUES (:id)`, { id: 1 });
      // The write is queued; TypeORM's cached BEGIN must commit it first (in program order), not run past it.
      const reader = open(join(dir, 'app.sqlite'));
      let committedBefore: unknown;
      try {
        await dataSource.transaction(async (manager) => {
          committedBefore = reader.prepare('SELECT id FROM notes').pluck().all();
          await manager.query('INSERT INTO notes (id) VALUES (2)');
        });
      } finally {
        reader.close();
      }
      expect(committedBefore).toEqual([1]);
      await expect(write).resolves.toEqual({ rows: [], affected: 1 });
      expect(await dataSource.query('SELECT id FROM notes ORDER BY id')).toEqual([{ id: 1 }, { id: 2 }]);
    } finally {
      await dataSource.destroy();
    }
  });

  describe('SqlRunner.sqliteUnit', () => {
    let dataSource: DataSource;
    let hot: SqlRunner;
    let reader: Database.Database;
    const committed = () => reader.prepare('SELECT id, note FROM notes ORDER BY id').all();
    const claim = sql`UPDATE notes SET note = 'claimed' WHERE id = :id AND note = 'free' RETURNING id`;
    const log = sql`INSERT INTO notes (id, note) VALUES (:id, :note)`;

    beforeEach(async () => {
      dataSource = new DataSource(await dataSourceOptions({ database: { kind: 'sqlite', file: join(dir, 'unit.sqlite') } }));
      await dataSource.initialize();
      await dataSource.query('CREATE TABLE notes (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
      await dataSource.query("INSERT INTO notes (id, note) VALUES (1, 'free')");
      hot = new SqlRunner(dataSource);
      reader = open(join(dir, 'unit.sqlite'));
    });
    afterEach(async () => {
      reader.close();
      await dataSource.destroy();
    });

    it('runs a write that depends on an earlier statement of the unit in the same flush, answered once committed', async () => {
      const unit = hot.sqliteUnit((exec) => {
        const won = exec<{ id: number }>(claim, { id: 1 }).rows.length === 1;
        if (won) exec(log, { id: 2, note: 'after the claim' });
        return won;
      });
      const again = hot.sqliteUnit((exec) => exec(claim, { id: 1 }).rows.length === 1);
      expect(committed()).toEqual([{ id: 1, note: 'free' }]);
      await expect(Promise.all([unit, again])).resolves.toEqual([true, false]);
      expect(committed()).toEqual([
        { id: 1, note: 'claimed' },
        { id: 2, note: 'after the claim' },
      ]);
    });

    it('keeps none of the writes of a unit that throws, and fails only that unit of the batch', async () => {
      const failing = hot.sqliteUnit((exec) => {
        exec(claim, { id: 1 });
        exec(log, { id: 1, note: 'a duplicate key' });
      });
      const other = hot.run(log, { id: 3, note: 'another caller' });
      await expect(failing).rejects.toMatchObject({ driverError: { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' } });
      await expect(other).resolves.toEqual({ rows: [], affected: 1 });
      expect(committed()).toEqual([
        { id: 1, note: 'free' },
        { id: 3, note: 'another caller' },
      ]);
    });
  });
});
