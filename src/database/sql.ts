import { TransactionHost } from '@nestjs-cls/transactional';
import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { Database, Statement as SqliteStatement } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { DataSource, QueryFailedError } from 'typeorm';
import { handlesOf } from './connections';
import { onTurn } from './transactions';
import { isDatabaseUnavailable } from './database-errors';
import { type SqlResult, Statement, type Write, bindValues } from './statement';
export { type SqlResult, Statement, type StatementWrite, type Write, bindValues, expiredRowsDeletion, sql } from './statement';

/**
 * How long {@link SqlRunner.unitOrOutcome} waits for the database to answer again after a lost connection, to tell
 * whether a unit of work committed (a server restart takes a second or two).
 */
const OUTCOME_WAIT_MS = 5_000;
/** Statements prepared on the SQLite connection, by text (the hot paths have a few dozen). */
const SQLITE_STATEMENTS = 200;

/**
 * Runs the repositories' hand-written {@link Statement}s on TypeORM's own connections, inside the current unit of
 * work when there is one ({@link Transactions}): a statement made by any repository during
 * `transactions.withTransaction(…)` commits or rolls back with the rest of that unit. No query building, no entity
 * hydration: the rows as the driver returns them.
 */
@Injectable()
export class SqlRunner {
  readonly postgres: boolean;
  /** SQLite: the statements prepared on its connection. */
  private sqlite: { db?: Database; prepared: LRUCache<string, SqliteStatement> } = { prepared: new LRUCache({ max: SQLITE_STATEMENTS }) };

  constructor(
    private readonly dataSource: DataSource,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {
    this.postgres = dataSource.options.type === 'postgres';
  }

  async run<Row = Record<string, unknown>>(statement: Statement, params: Record<string, unknown> = {}): Promise<SqlResult<Row>> {
    const { text, values } = bindValues(statement, params, this.postgres);
    return this.query<Row>(text, values, statement.name);
  }

  /**
   * Runs a statement on the unit's connection (`QueryRunner.connect()` gives the driver's), or outside a unit on
   * PostgreSQL's pool / SQLite's connection once no unit holds it (see transactions.ts). Straight on the driver:
   * PostgreSQL prepares a {@link Statement} once per connection under its name, SQLite once per text.
   */
  private async query<Row>(text: string, values: unknown[], name?: string): Promise<SqlResult<Row>> {
    const unit = this.transactions.tx.queryRunner;
    const { logger } = this.dataSource;
    logger.logQuery(text, values);
    try {
      if (!this.postgres) {
        if (unit) return this.sqliteExec<Row>((await unit.connect()) as Database, text, values);
        const db = await this.sqliteConnection();
        return await onTurn(this.dataSource, () => this.sqliteExec<Row>(db, text, values));
      }
      const client: pg.ClientBase | pg.Pool = unit ? ((await unit.connect()) as pg.ClientBase) : this.pool();
      const result = await client.query(name ? { name, text, values } : { text, values });
      const rows = result.rows as Row[];
      return { rows, affected: result.rowCount ?? rows.length };
    } catch (error) {
      if (error instanceof QueryFailedError) throw error;
      logger.logQueryError(error as Error, text, values);
      throw new QueryFailedError(text, values, error as Error);
    }
  }

  private sqliteExec<Row>(db: Database, text: string, values: unknown[]): SqlResult<Row> {
    if (this.sqlite.db !== db) this.sqlite = { db, prepared: new LRUCache({ max: SQLITE_STATEMENTS }) };
    let prepared = this.sqlite.prepared.get(text);
    if (!prepared) this.sqlite.prepared.set(text, (prepared = db.prepare(text)));
    if (!prepared.reader) return { rows: [], affected: prepared.run(...values).changes };
    const rows = prepared.all(...values) as Row[];
    return { rows, affected: rows.length };
  }

  /** SQLite's one connection (TypeORM's), read again when the data source has a new one. */
  private async sqliteConnection(): Promise<Database> {
    if (this.sqlite.db?.open) return this.sqlite.db;
    return (await this.dataSource.createQueryRunner().connect()) as Database;
  }

  /** The driver's pool (TypeORM's), read at each call: a reconnected data source has a new one. */
  private pool(): pg.Pool {
    const pool = handlesOf(this.dataSource).pool;
    if (!pool) throw new QueryFailedError('', [], new Error('Connection pool is not open'));
    return pool;
  }

  /**
   * Runs `writes` in one unit of work (joining the current one): all of them or none (a change and its audit
   * event, say). Returns the rows each write changed (0 for one skipped by `onlyIfChanged`).
   */
  atomic(writes: Write[]): Promise<number[]> {
    if (writes.length === 1 && !this.transactions.isTransactionActive()) {
      // One statement is a transaction of its own: no BEGIN and COMMIT around it.
      const [write] = writes;
      const done = 'statement' in write ? this.run(write.statement, write.params) : this.query(write.text, write.values);
      return done.then(({ affected }) => [affected]);
    }
    return this.transactions.withTransaction(async () => {
      const changed: number[] = [];
      for (const write of writes) {
        if (write.onlyIfChanged && !changed.at(-1)) changed.push(0);
        else if ('statement' in write) changed.push((await this.run(write.statement, write.params)).affected);
        else changed.push((await this.query(write.text, write.values)).affected);
      }
      return changed;
    });
  }

  /**
   * `work` as one unit of work (joining the current one) that first takes the write lock `lockKey` (16 hex digits):
   * no other instance runs a unit under the same lock in between, so what `work` reads stays true until it commits.
   * PostgreSQL: the transaction-scoped advisory lock. SQLite: the database's write lock, taken by a write that
   * changes nothing (the instances of a file may be several data sources of one process, each with turns of its own).
   */
  locked<T>(lockKey: string, work: () => Promise<T>): Promise<T> {
    if (!/^[0-9a-f]{16}$/.test(lockKey)) return Promise.reject(new Error('the lock key must be 16 hex digits'));
    return this.transactions.withTransaction(async () => {
      await this.query(this.postgres ? `SELECT pg_advisory_xact_lock(x'${lockKey}'::bigint)` : 'DELETE FROM migrations WHERE 0', []);
      return work();
    });
  }

  /** The first row, if any. */
  async one<Row = Record<string, unknown>>(statement: Statement, params: Record<string, unknown> = {}): Promise<Row | undefined> {
    return (await this.run<Row>(statement, params)).rows[0];
  }

  /**
   * `unit` (a unit of work whose outcome can be read back by a key it wrote: a new token's hash, an event's id).
   * When the connection is lost before the answer, PostgreSQL may still have committed it: `outcome` is then read as
   * soon as the database answers again, within {@link OUTCOME_WAIT_MS}. Something found is the answer (the client is
   * told what happened, and its retry is not taken for a replay); nothing means the unit did not commit, and the
   * connection's error is thrown (503: a retry is safe). `outcome` starts by waiting for the row the unit locked
   * (`SELECT … FOR UPDATE`), so a unit still running on the lost connection's server process has ended first.
   */
  async unitOrOutcome<T>(unit: () => Promise<T>, outcome: () => Promise<T | undefined>): Promise<T> {
    try {
      return await unit();
    } catch (error) {
      if (!this.postgres || !isDatabaseUnavailable(error)) throw error;
      const deadline = Date.now() + OUTCOME_WAIT_MS;
      for (let wait = 50; ; wait = Math.min(wait * 2, 1_000)) {
        try {
          const found = await outcome();
          if (found === undefined) throw error;
          return found;
        } catch (again) {
          if (again === error || !isDatabaseUnavailable(again) || Date.now() + wait > deadline) throw error;
          await sleep(wait);
        }
      }
    }
  }
}

/** A `bigint` column as a number (PostgreSQL's driver returns int8 as a string), keeping null. */
export function epochMs(value: unknown): number;
export function epochMs(value: unknown, nullable: true): number | null;
export function epochMs(value: unknown, nullable = false): number | null {
  if (value === null || value === undefined) {
    if (nullable) return null;
    throw new Error('unexpected NULL timestamp');
  }
  return typeof value === 'number' ? value : Number(value);
}
