import type { DataSource } from 'typeorm';
import { withAdvisoryLock } from './locked-write';

/** The PostgreSQL advisory lock key of the start-up work (an arbitrary constant of this service: "oauthsvc"). */
const STARTUP_LOCK_KEY = '6f61757468737663';

/**
 * Runs start-up work (migrations, demo data) with no other instance doing the same at the
 * same time: on PostgreSQL under a session advisory lock, held on a connection of its own, so that instances
 * started together on an empty database take turns instead of racing (the second sees what the first did). On
 * SQLite, which serialises writers by itself, the work runs as is.
 */
export async function withStartupLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  return (await withAdvisoryLock(dataSource, STARTUP_LOCK_KEY, work, true)) as T;
}
