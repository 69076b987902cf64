import { QueryRunnerAlreadyReleasedError } from 'typeorm';

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08006',
  'SQLITE_BUSY',
]);

/** True when an error means the database cannot be reached right now (answer 503, not 500). */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    const e = current as { code?: string; message?: string; driverError?: unknown; cause?: unknown };
    if (e.code && UNAVAILABLE_CODES.has(e.code)) return true;
    // TypeORM releases a unit's query runner whose connection was lost; the unit's next statement says so.
    if (current instanceof QueryRunnerAlreadyReleasedError) return true;
    if (
      typeof e.message === 'string' &&
      /Connection terminated|is not queryable|timeout exceeded when trying to connect|Query read timeout|connection timeout/i.test(
        e.message,
      )
    ) {
      return true;
    }
    current = e.driverError ?? e.cause;
  }
  return false;
}

/** True when an error is a unique-constraint violation (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; driverError?: { code?: string } };
  const code = e?.driverError?.code ?? e?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
