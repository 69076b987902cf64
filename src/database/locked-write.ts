import type { DataSource } from 'typeorm';
import type { Statement } from './sql';

/** A statement and its values, to run inside {@link lockedReadWrite}. */
export type Write = [Statement, Record<string, unknown>];

/** The better-sqlite3 connection under TypeORM's driver (only what is used here). */
interface SqliteConnection {
  inTransaction: boolean;
  prepare(text: string): { all(...values: unknown[]): unknown[]; run(...values: unknown[]): unknown };
  transaction<T>(fn: () => T): { immediate(): T };
}

function bind(statement: Statement, params: Record<string, unknown>, postgres: boolean): { text: string; values: unknown[] } {
  const { text, names } = statement.compile(postgres);
  return {
    text,
    values: names.map((name) => {
      if (!Object.hasOwn(params, name)) throw new Error(`no value for :${name}`);
      return params[name];
    }),
  };
}

/**
 * Read, decide, write, with no other instance doing the same in between: `decide` sees what `read` returns at
 * that moment and returns the writes to make (and a result). On PostgreSQL this is a transaction that first takes
 * the transaction-scoped advisory lock `lockKey` (a bigint as 16 hex digits), so a second instance waits and then
 * reads what the first wrote. On SQLite it is one synchronous `BEGIN IMMEDIATE` transaction on the connection:
 * it holds the write lock from its first statement, and never yields to the event loop, so neither another
 * process nor another data source of this process (tests run several instances in one) can interleave.
 */
export async function lockedReadWrite<Row, T>(
  dataSource: DataSource,
  lockKey: string,
  read: Statement,
  decide: (rows: Row[]) => { writes: Write[]; result: T },
): Promise<T> {
  if (!/^[0-9a-f]{16}$/.test(lockKey)) throw new Error('the lock key must be 16 hex digits');
  if (dataSource.options.type === 'postgres') {
    return dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(x'${lockKey}'::bigint)`);
      const select = bind(read, {}, true);
      const { writes, result } = decide((await manager.query(select.text, select.values)) as Row[]);
      for (const [statement, params] of writes) {
        const { text, values } = bind(statement, params, true);
        await manager.query(text, values);
      }
      return result;
    });
  }
  const db = (dataSource.driver as unknown as { databaseConnection: SqliteConnection }).databaseConnection;
  // TypeORM runs its SQLite transactions on this same connection; one of them is under way (awaiting between
  // its statements): this one cannot start inside it.
  if (db.inTransaction) throw new Error('the database connection is inside another transaction; try again');
  return db
    .transaction(() => {
      const select = bind(read, {}, false);
      const { writes, result } = decide(db.prepare(select.text).all(...select.values) as Row[]);
      for (const [statement, params] of writes) {
        const { text, values } = bind(statement, params, false);
        db.prepare(text).run(...values);
      }
      return result;
    })
    .immediate();
}
