import { Injectable } from '@nestjs/common';
import type { Database } from 'better-sqlite3';
import type { Pool, QueryResult } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable } from './database-errors';
import { handlesOf } from './connections';
import { SqliteWrites } from './sqlite-writes';
import { type SqlResult, type SqliteExec, Statement, type Write, bindValues } from './statement';

export {
  type SqlResult,
  type SqliteExec,
  Statement,
  type StatementWrite,
  type Write,
  bindValues,
  expiredRowsDeletion,
  sql,
} from './statement';

/**
 * How long {@link SqlRunner.oneOrOutcome} waits for the database to answer again after a lost connection, to tell
 * whether a write committed (a server restart takes a second or two).
 */
const OUTCOME_WAIT_MS = 5_000;

/**
 * Runs {@link Statement}s on the application's database — the connections under its TypeORM data source (see
 * `connections.ts`), its logging hook and error type (`QueryFailedError`) — without query building or entity
 * hydration. Meant for the few statements per request on the hot paths; everything else stays on repositories.
 *
 * PostgreSQL: each statement is a named prepared statement (node-postgres prepares it once per connection; later
 * runs only bind and execute), sent on one of the data source's pipelined connections
 * (`pipelined-connection.ts`: a statement does not wait for the answers to those before it, and each is its own
 * transaction) or, when
 * they are full, on a pooled connection; {@link atomic} holds a pooled connection for its
 * transaction.
 * Behind PgBouncer this needs its support of prepared statements in transaction mode (1.21+).
 *
 * SQLite: better-sqlite3 runs a statement synchronously on the one connection, prepared once. A read runs at
 * once. Writes are committed together: each caller's writes ({@link run}, {@link atomic}, {@link sqliteUnit}) are
 * queued, and once per turn of the event loop the queue runs in one transaction, each caller's writes in a
 * savepoint of their own (a failure undoes that caller's writes only); every caller hears of its writes once the
 * transaction has committed. A commit writes every page it changed to the WAL, so one commit for the writes of
 * many requests instead of one each is most of the flows' cost on SQLite (docs/performance.md). Nothing runs inside
 * a transaction TypeORM has open on that connection (awaiting between its statements): the batch waits for it to
 * end, so no write of the hot paths can be rolled back with someone else's transaction.
 */
@Injectable()
export class SqlRunner {
  readonly postgres: boolean;
  private readonly sqliteWrites: SqliteWrites;

  constructor(private readonly dataSource: DataSource) {
    this.postgres = dataSource.options.type === 'postgres';
    this.sqliteWrites = new SqliteWrites(dataSource);
  }

  run<Row = Record<string, unknown>>(statement: Statement, params: Record<string, unknown> = {}): Promise<SqlResult<Row>> {
    try {
      const { text, values } = bindValues(statement, params, this.postgres);
      if (this.postgres) return this.runPrepared<Row>(statement, text, values);
      const sqlite = this.sqliteWrites.handle();
      if (this.sqliteWrites.writes(sqlite, text))
        return this.sqliteWrites.enqueue(false, (batch) => this.sqliteWrites.exec<Row>(batch, text, values));
      if (!sqlite.db.inTransaction) return Promise.resolve(this.sqliteWrites.exec<Row>(sqlite, text, values));
      return this.sqliteWrites.idle().then((idle) => this.sqliteWrites.exec<Row>(idle, text, values));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * SQLite only: runs `work` — its statements, through `exec` (synchronous), and the plain code between them — as
   * one transaction, all or none: a write that depends on what an earlier statement returned needs no second
   * round. Resolves with `work`'s result once committed; if `work` throws, none of its writes stay and the promise
   * rejects with that error.
   */
  sqliteUnit<T>(work: (exec: SqliteExec) => T): Promise<T> {
    if (this.postgres) return Promise.reject(new Error('sqliteUnit runs on SQLite only'));
    return this.sqliteWrites.enqueue(true, (sqlite) =>
      work(<Row>(statement: Statement, params: Record<string, unknown> = {}) => {
        const { text, values } = bindValues(statement, params, false);
        return this.sqliteWrites.exec<Row>(sqlite, text, values);
      }),
    );
  }

  /**
   * Runs `writes` in one transaction: all of them or none (a change and its audit event, say). On SQLite the
   * transaction is synchronous on the connection: nothing else of this process runs in between. On PostgreSQL it
   * holds a pooled connection for its statements. Returns the rows each write changed (0 for one skipped by
   * `onlyIfChanged`).
   */
  async atomic(writes: Write[]): Promise<number[]> {
    const { logger } = this.dataSource;
    const compiled = writes.map((write) => {
      const { text, values } = 'statement' in write ? bindValues(write.statement, write.params, this.postgres) : write;
      return { text, values, onlyIfChanged: Boolean(write.onlyIfChanged), name: 'statement' in write ? write.statement.name : undefined };
    });
    if (!this.postgres) {
      return this.sqliteWrites.enqueue(compiled.length > 1, (sqlite) => {
        const changed: number[] = [];
        for (const { text, values, onlyIfChanged } of compiled) {
          changed.push(onlyIfChanged && !changed.at(-1) ? 0 : this.sqliteWrites.exec(sqlite, text, values).affected);
        }
        return changed;
      });
    }
    if (writes.length === 1 && 'statement' in writes[0] && !writes[0].onlyIfChanged) {
      // One statement is a transaction of its own: no connection held for BEGIN and COMMIT.
      return [(await this.run(writes[0].statement, writes[0].params)).affected];
    }
    const client = await this.pool().connect();
    const changed: number[] = [];
    try {
      await client.query('BEGIN');
      for (const { text, values, onlyIfChanged, name } of compiled) {
        if (onlyIfChanged && !changed.at(-1)) {
          changed.push(0);
          continue;
        }
        logger.logQuery(text, values);
        const result = await client.query(name ? { name, text, values } : { text, values });
        changed.push(result.rowCount ?? 0);
      }
      await client.query('COMMIT');
    } catch (error) {
      // A connection that cannot roll back (it was lost) goes back with the error, and the pool closes it.
      const broken = await client.query('ROLLBACK').then(
        () => undefined,
        (rollback: unknown) => rollback as Error,
      );
      client.release(broken);
      throw error instanceof QueryFailedError ? error : new QueryFailedError('atomic writes', [], error as Error);
    }
    client.release();
    return changed;
  }

  /**
   * SQLite only: `work` inside one `BEGIN IMMEDIATE` transaction on the connection (the write lock from its first
   * statement, so no other process writes between its read and its writes), synchronous like {@link sqliteUnit}.
   */
  async sqliteImmediate<T>(work: (db: Database) => T): Promise<T> {
    const sqlite = await this.sqliteWrites.idle();
    return sqlite.db.transaction(() => work(sqlite.db)).immediate();
  }

  /** The driver's pool, read at each call: a reconnected data source has a new one. */
  private pool(): Pool {
    const pool = handlesOf(this.dataSource).pool;
    if (!pool) throw new QueryFailedError('', [], new Error('Connection pool is not open'));
    return pool;
  }

  /** The first row, if any. */
  async one<Row = Record<string, unknown>>(statement: Statement, params: Record<string, unknown> = {}): Promise<Row | undefined> {
    return (await this.run<Row>(statement, params)).rows[0];
  }

  /**
   * {@link one} for a write whose outcome can be read back by a key it wrote (a new token's hash, an event's id).
   * When the connection is lost before the answer, the database may still have committed it: `outcome` (the same
   * row, read by that key) is then read on a pooled connection as soon as the database answers again, within
   * {@link OUTCOME_WAIT_MS}. A row found is the answer (the client is told what happened, and its retry is not
   * taken for a replay); none means the write did not commit, and the connection's error is thrown (503: a retry
   * is safe). `settle` runs first: a `SELECT … FOR UPDATE` of the row the write locks, which waits until a write
   * still running on the lost connection's server process has committed or rolled back (a fresh statement then
   * sees its outcome). On PostgreSQL only: SQLite's writes are in process.
   */
  async oneOrOutcome<Row = Record<string, unknown>>(
    statement: Statement,
    params: Record<string, unknown>,
    { settle, outcome }: { settle: Statement; outcome: Statement },
  ): Promise<Row | undefined> {
    try {
      return await this.one<Row>(statement, params);
    } catch (error) {
      if (!this.postgres || !isDatabaseUnavailable(error)) throw error;
      const deadline = Date.now() + OUTCOME_WAIT_MS;
      for (let wait = 50; ; wait = Math.min(wait * 2, 1_000)) {
        try {
          for (const query of [settle, outcome]) this.dataSource.logger.logQuery(query.source, []);
          await this.pool().query(bindValues(settle, params, true));
          const found = (await this.pool().query(bindValues(outcome, params, true))).rows[0] as Row | undefined;
          if (found === undefined) throw error;
          return found;
        } catch (again) {
          if (again === error || !isDatabaseUnavailable(again) || Date.now() + wait > deadline) throw error;
          await sleep(wait);
        }
      }
    }
  }

  private async runPrepared<Row>(statement: Statement, text: string, values: unknown[]): Promise<SqlResult<Row>> {
    const { logger } = this.dataSource;
    logger.logQuery(text, values);
    let result: QueryResult;
    try {
      if (statement.options.unprepared) result = await this.pool().query({ text, values });
      else {
        const query = { name: statement.name, text, values };
        result = await (handlesOf(this.dataSource).pipeline?.query(query) ?? this.pool().query(query));
      }
    } catch (error) {
      logger.logQueryError(error as Error, text, values);
      throw new QueryFailedError(text, values, error as Error);
    }
    const rows = result.rows as Row[];
    return { rows, affected: result.rowCount ?? rows.length };
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
