import type { DataSource } from 'typeorm';

/** The PostgreSQL advisory lock key of the start-up work (an arbitrary constant of this service: "oauthsvc"). */
const STARTUP_LOCK_KEY = '6f61757468737663';

/**
 * Runs start-up work (migrations, demo data) with no other instance doing the same at the
 * same time: on PostgreSQL under a session advisory lock, held on a connection of its own, so that instances
 * started together on an empty database take turns instead of racing (the second sees what the first did). On
 * SQLite, which serialises writers by itself, the work runs as is.
 */
export async function withStartupLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  if (dataSource.options.type !== 'postgres') return work();
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query(`SELECT pg_advisory_lock(x'${STARTUP_LOCK_KEY}'::bigint)`);
    try {
      return await work();
    } finally {
      await runner.query(`SELECT pg_advisory_unlock(x'${STARTUP_LOCK_KEY}'::bigint)`);
    }
  } finally {
    await runner.release();
  }
}
