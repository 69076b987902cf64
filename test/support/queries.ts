import { DataSource } from 'typeorm';
import type { TestApp } from './test-app';

export interface CapturedQuery {
  sql: string;
  parameters: unknown;
}

/**
 * Records every SQL statement the app's DataSource runs while `fn` runs (through TypeORM's logger hook, which every
 * query runner calls whatever the logging settings). Background jobs (revocation sync, key reload) may appear too.
 */
export async function captureQueries(t: TestApp, fn: () => Promise<unknown>): Promise<CapturedQuery[]> {
  const logger = t.app.get(DataSource).logger;
  const original = logger.logQuery;
  const captured: CapturedQuery[] = [];
  logger.logQuery = function (sql, parameters, queryRunner) {
    captured.push({ sql, parameters: parameters ?? [] });
    return original.call(this, sql, parameters, queryRunner);
  };
  try {
    await fn();
  } finally {
    logger.logQuery = original;
  }
  return captured;
}

/** The statements that read or write the users or orders tables. */
export function touchingUsersOrOrders(queries: CapturedQuery[]): CapturedQuery[] {
  return queries.filter((q) => /["`\s](users|orders)["`\s]/i.test(` ${q.sql} `));
}
