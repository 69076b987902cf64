import type { DataSource } from 'typeorm';
import { type Statement, type StatementWrite, bindValues as bind, sqliteConnection } from './sql';
import { SqliteGroupCommit } from './sqlite-group-commit';

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
  decide: (rows: Row[]) => { writes: StatementWrite[]; result: T },
): Promise<T> {
  if (!/^[0-9a-f]{16}$/.test(lockKey)) throw new Error('the lock key must be 16 hex digits');
  if (dataSource.options.type === 'postgres') {
    return dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(x'${lockKey}'::bigint)`);
      const select = bind(read, {}, true);
      const { writes, result } = decide((await manager.query(select.text, select.values)) as Row[]);
      for (const { statement, params } of writes) {
        const { text, values } = bind(statement, params, true);
        await manager.query(text, values);
      }
      return result;
    });
  }
  const db = sqliteConnection(dataSource);
  // The hot paths' queued writes (if any) are committed first: this transaction is one of its own.
  SqliteGroupCommit.flushQueued();
  // TypeORM runs its SQLite transactions on this same connection; one of them is under way (awaiting between
  // its statements): this one cannot start inside it.
  if (db.inTransaction) throw new Error('the database connection is inside another transaction; try again');
  return db
    .transaction(() => {
      const select = bind(read, {}, false);
      const { writes, result } = decide(db.prepare(select.text).all(...select.values) as Row[]);
      for (const { statement, params } of writes) {
        const { text, values } = bind(statement, params, false);
        db.prepare(text).run(...values);
      }
      return result;
    })
    .immediate();
}
