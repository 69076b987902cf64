import type { DataSource } from 'typeorm';
import { SqlRunner, Statement, type StatementWrite, bindValues as bind } from './sql';

/**
 * Read, decide, write, with no other instance doing the same in between: `decide` sees what `read` returns at
 * that moment and returns the writes to make (and a result). On PostgreSQL this is a transaction that first takes
 * the transaction-scoped advisory lock `lockKey` (a bigint as 16 hex digits), so a second instance waits and then
 * reads what the first wrote. On SQLite it is one synchronous `BEGIN IMMEDIATE` transaction on the connection:
 * it holds the write lock from its first statement, and never yields to the event loop, so neither another
 * process nor another data source of this process (tests run several instances in one) can interleave.
 * `read` is a statement, or a statement with its parameters.
 */
export async function lockedReadWrite<Row, T>(
  dataSource: DataSource,
  lockKey: string,
  read: Statement | Omit<StatementWrite, 'onlyIfChanged'>,
  decide: (rows: Row[]) => { writes: StatementWrite[]; result: T },
): Promise<T> {
  if (!/^[0-9a-f]{16}$/.test(lockKey)) throw new Error('the lock key must be 16 hex digits');
  const { statement, params } = read instanceof Statement ? { statement: read, params: {} } : read;
  if (dataSource.options.type === 'postgres') {
    return dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(x'${lockKey}'::bigint)`);
      const select = bind(statement, params, true);
      const { writes, result } = decide((await manager.query(select.text, select.values)) as Row[]);
      for (const { statement, params } of writes) {
        const { text, values } = bind(statement, params, true);
        await manager.query(text, values);
      }
      return result;
    });
  }
  // Once no transaction of TypeORM's is open on the connection (see SqlRunner), synchronous throughout.
  return new SqlRunner(dataSource).sqliteImmediate((db) => {
    const select = bind(statement, params, false);
    const { writes, result } = decide(db.prepare(select.text).all(...select.values) as Row[]);
    for (const { statement, params } of writes) {
      const { text, values } = bind(statement, params, false);
      db.prepare(text).run(...values);
    }
    return result;
  });
}

/**
 * Runs `work` unless another instance is running it: on PostgreSQL under the session-scoped advisory lock `lockKey`
 * (16 hex digits), taken with `pg_try_advisory_lock` on a connection of its own (undefined when another holds it);
 * on SQLite (one process at a time uses the file for such work) it just runs.
 */
export async function withTryLock<T>(dataSource: DataSource, lockKey: string, work: () => Promise<T>): Promise<T | undefined> {
  return withAdvisoryLock(dataSource, lockKey, work, false);
}

/**
 * `work` under the session-scoped advisory lock `lockKey` on a connection of its own (PostgreSQL): waited for, or,
 * with `wait` false, tried once (undefined when another session holds it). On SQLite `work` just runs.
 */
export async function withAdvisoryLock<T>(
  dataSource: DataSource,
  lockKey: string,
  work: () => Promise<T>,
  wait: boolean,
): Promise<T | undefined> {
  if (!/^[0-9a-f]{16}$/.test(lockKey)) throw new Error('the lock key must be 16 hex digits');
  if (dataSource.options.type !== 'postgres') return work();
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    if (wait) await runner.query(`SELECT pg_advisory_lock(x'${lockKey}'::bigint)`);
    else {
      const [{ locked }] = (await runner.query(`SELECT pg_try_advisory_lock(x'${lockKey}'::bigint) AS locked`)) as { locked: boolean }[];
      if (!locked) return undefined;
    }
    try {
      return await work();
    } finally {
      await runner.query(`SELECT pg_advisory_unlock(x'${lockKey}'::bigint)`);
    }
  } finally {
    await runner.release();
  }
}
