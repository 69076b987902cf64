import type { DataSource } from 'typeorm';
import { type SqlRunner, Statement, type StatementWrite } from './sql';

/**
 * Read, decide, write, with no other instance doing the same in between: `decide` sees what `read` returns at
 * that moment and returns the writes to make (and a result), all in one unit of work under the lock `lockKey`
 * ({@link SqlRunner.locked}). `read` is a statement, or a statement with its parameters.
 */
export function lockedReadWrite<Row, T>(
  db: SqlRunner,
  lockKey: string,
  read: Statement | Omit<StatementWrite, 'onlyIfChanged'>,
  decide: (rows: Row[]) => { writes: StatementWrite[]; result: T },
): Promise<T> {
  const { statement, params } = read instanceof Statement ? { statement: read, params: {} } : read;
  return db.locked(lockKey, async () => {
    const { writes, result } = decide((await db.run<Row>(statement, params)).rows);
    for (const write of writes) await db.run(write.statement, write.params);
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
