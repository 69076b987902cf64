import type { DataSource } from 'typeorm';

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
