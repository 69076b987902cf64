import { Injectable } from '@nestjs/common';
import type { Database, Statement as SqliteStatement } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import type { Pool, QueryResult } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable } from '../common/database-errors';
import { handlesOf } from './connections';

/**
 * How long {@link SqlRunner.oneOrOutcome} waits for the database to answer again after a lost connection, to tell
 * whether a write committed (a server restart takes a second or two).
 */
const OUTCOME_WAIT_MS = 5_000;

/** One placeholder syntax for both databases: `:name` (a `::` cast is left alone). */
const PLACEHOLDER = /(?<!:):([A-Za-z_][A-Za-z0-9_]*)/g;

interface Compiled {
  text: string;
  names: string[];
}

/**
 * A parameterised statement written once with `:name` placeholders and compiled, the first time each driver runs
 * it, to that driver's positional form (`$1` for PostgreSQL, `?` for SQLite). Values are always bound, never
 * spliced into the text.
 */
export class Statement {
  private static count = 0;
  private static readonly made: Statement[] = [];
  private readonly compiled: { postgres?: Compiled; sqlite?: Compiled } = {};
  /** The name PostgreSQL prepares it under, once per connection (unique per statement in the process). */
  readonly name = `hot_${++Statement.count}`;

  /**
   * `unprepared`: on PostgreSQL, planned at each run with its values rather than prepared once per connection, for
   * a maintenance statement whose best plan depends on them and on the table's size (a batch of expired rows).
   */
  constructor(
    readonly source: string,
    readonly options: { unprepared?: boolean } = {},
  ) {
    Statement.made.push(this);
  }

  /** Every statement made so far in this process (the hot paths make theirs when their modules load). */
  static all(): readonly Statement[] {
    return Statement.made;
  }

  compile(postgres: boolean): Compiled {
    const key = postgres ? 'postgres' : 'sqlite';
    let compiled = this.compiled[key];
    if (!compiled) {
      const names: string[] = [];
      const text = this.source.replace(PLACEHOLDER, (_, name: string) => {
        names.push(name);
        return postgres ? `$${names.length}` : '?';
      });
      compiled = this.compiled[key] = { text: text.replace(/\s+/g, ' ').trim(), names };
    }
    return compiled;
  }
}

/** `sql\`SELECT … WHERE id = :id\``: a {@link Statement}, for the hot paths that skip the ORM's query building. */
export function sql(strings: TemplateStringsArray): Statement {
  if (strings.length !== 1) throw new Error('sql`` takes no interpolations: bind values with :name placeholders');
  return new Statement(strings[0]);
}

/** Binds `params` to a statement's placeholders, for PostgreSQL or SQLite (which takes booleans as 0 and 1). */
export function bindValues(statement: Statement, params: Record<string, unknown>, postgres: boolean): { text: string; values: unknown[] } {
  const { text, names } = statement.compile(postgres);
  const values = names.map((name) => {
    if (!Object.hasOwn(params, name)) throw new Error(`no value for :${name}`);
    const value = params[name];
    return typeof value === 'boolean' && !postgres ? Number(value) : value;
  });
  return { text, values };
}

/**
 * One statement of an {@link SqlRunner.atomic} group: a {@link Statement} with its parameters, or SQL already in
 * the driver's own form (e.g. from a TypeORM query builder's `getQueryAndParameters()`). With `onlyIfChanged`, it
 * runs only when the statement before it changed a row.
 */
export type Write = StatementWrite | { text: string; values: unknown[]; onlyIfChanged?: boolean };

/** A {@link Statement} with its parameters, as one of a group of writes. */
export interface StatementWrite {
  statement: Statement;
  params: Record<string, unknown>;
  onlyIfChanged?: boolean;
}

/** Runs one statement at once inside {@link SqlRunner.sqliteUnit}. */
export type SqliteExec = <Row = Record<string, unknown>>(statement: Statement, params?: Record<string, unknown>) => SqlResult<Row>;

export interface SqlResult<Row> {
  rows: Row[];
  /** Rows changed by an INSERT/UPDATE/DELETE (with RETURNING: the rows returned). */
  affected: number;
}

/** Statements prepared per SQLite connection, by text (the hot paths have a few dozen). */
const SQLITE_STATEMENTS = 200;
/**
 * How long a statement on SQLite waits for a transaction of TypeORM's on the same connection (which awaits between
 * its statements) to end, before it fails as unavailable.
 */
const SQLITE_BUSY_WAIT_MS = 10_000;

/**
 * Turns of the event loop a SQLite batch stays open after the one it was started in, while each turn still adds
 * writes: the requests one batch answers send their next ones together, and they come in over the next turns.
 */
const SQLITE_BATCH_EXTRA_TURNS = 2;

/** A SQLite connection's prepared statements and its transaction wrappers, made once. */
interface SqliteHandle {
  db: Database;
  prepared: LRUCache<string, SqliteStatement>;
  /** A transaction of its own, or a savepoint inside the batch's (better-sqlite3 nests them so). */
  transaction: (work: () => unknown) => unknown;
  /** One `BEGIN IMMEDIATE` transaction around a batch of units (see {@link SqlRunner.enqueue}). */
  batch: { immediate(units: SqliteUnit[]): void };
}

/** One caller's writes on SQLite, waiting for the next batch: all of them or none, then its promise settles. */
interface SqliteUnit {
  work: (sqlite: SqliteHandle) => unknown;
  /** Several statements: run in a savepoint, so that a failure undoes this unit only. */
  several: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  outcome?: { value: unknown } | { error: unknown };
}

/**
 * Runs {@link Statement}s on the application's database — the connections under its TypeORM data source (see
 * `connections.ts`), its logging hook and error type (`QueryFailedError`) — without query building or entity
 * hydration. Meant for the few statements per request on the hot paths; everything else stays on repositories.
 *
 * PostgreSQL: each statement is a named prepared statement (node-postgres prepares it once per connection; later
 * runs only bind and execute), sent on one of the data source's two pipelined connections
 * (`pipelined-connection.ts`: a statement does not wait for the answers to those before it, and each is its own
 * transaction) or, when they are full, on a pooled connection; {@link atomic} holds a pooled connection for its
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
  private sqliteHandle: SqliteHandle | undefined;
  /** SQLite: the units waiting for the next batch, and whether it is scheduled. */
  private queued: SqliteUnit[] = [];
  private batchScheduled = false;
  /** The queue's length at the last turn the batch was held open, and how many turns it has been. */
  private heldAt = 0;
  private turnsHeld = 0;

  constructor(private readonly dataSource: DataSource) {
    this.postgres = dataSource.options.type === 'postgres';
  }

  run<Row = Record<string, unknown>>(statement: Statement, params: Record<string, unknown> = {}): Promise<SqlResult<Row>> {
    try {
      const { text, values } = bindValues(statement, params, this.postgres);
      if (this.postgres) return this.runPrepared<Row>(statement, text, values);
      const sqlite = this.sqlite();
      if (this.writesSqlite(sqlite, text)) return this.enqueue(false, (batch) => this.execSqlite<Row>(batch, text, values));
      if (!sqlite.db.inTransaction) return Promise.resolve(this.execSqlite<Row>(sqlite, text, values));
      return this.idleSqlite().then((idle) => this.execSqlite<Row>(idle, text, values));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The SQLite connection once no transaction is open on it (one of TypeORM's, between its statements). */
  private async idleSqlite(): Promise<SqliteHandle> {
    const sqlite = this.sqlite();
    if (!sqlite.db.inTransaction) return sqlite;
    const deadline = Date.now() + SQLITE_BUSY_WAIT_MS;
    while (sqlite.db.inTransaction) {
      if (Date.now() > deadline)
        throw new QueryFailedError('BEGIN', [], Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
      await sleep(1);
    }
    return sqlite;
  }

  private sqlite(): SqliteHandle {
    const db = handlesOf(this.dataSource).sqlite;
    if (!db || !db.open) throw new QueryFailedError('', [], new Error('The database connection is not open'));
    if (this.sqliteHandle?.db !== db) {
      const transaction = db.transaction((work: () => unknown) => work());
      const handle: SqliteHandle = {
        db,
        prepared: new LRUCache({ max: SQLITE_STATEMENTS }),
        transaction,
        batch: db.transaction((units: SqliteUnit[]) => {
          for (const unit of units) {
            try {
              unit.outcome = { value: unit.several ? transaction(() => unit.work(handle)) : unit.work(handle) };
            } catch (error) {
              // SQLite ended the whole transaction (an I/O error, say): nothing of this batch stays.
              if (!db.inTransaction) throw error;
              unit.outcome = { error };
            }
          }
        }),
      };
      this.sqliteHandle = handle;
    }
    return this.sqliteHandle;
  }

  /**
   * Queues `work` (synchronous, on the connection) for the next batch; resolves with its result once the batch has
   * committed, or rejects with its error (then none of its writes stay).
   */
  private enqueue<T>(several: boolean, work: (sqlite: SqliteHandle) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ work, several, resolve: resolve as (value: unknown) => void, reject });
      if (!this.batchScheduled) {
        this.batchScheduled = true;
        setImmediate(() => void this.runBatch());
      }
    });
  }

  /** Runs the queued units in one transaction, once no transaction of TypeORM's is open on the connection. */
  private async runBatch(): Promise<void> {
    if (this.queued.length > this.heldAt && this.turnsHeld < SQLITE_BATCH_EXTRA_TURNS) {
      this.heldAt = this.queued.length;
      this.turnsHeld++;
      setImmediate(() => void this.runBatch());
      return;
    }
    this.heldAt = 0;
    this.turnsHeld = 0;
    let sqlite: SqliteHandle | undefined;
    let failure: unknown;
    try {
      sqlite = await this.idleSqlite();
    } catch (error) {
      failure = error;
    }
    const units = this.queued;
    this.queued = [];
    this.batchScheduled = false;
    if (sqlite) {
      try {
        sqlite.batch.immediate(units);
      } catch (error) {
        failure = error instanceof QueryFailedError ? error : new QueryFailedError('COMMIT', [], error as Error);
      }
    }
    for (const unit of units) {
      const outcome = failure === undefined ? unit.outcome : { error: failure };
      if (outcome && 'value' in outcome) unit.resolve(outcome.value);
      else unit.reject(outcome?.error);
    }
  }

  /** Whether a statement writes (false for one that does not prepare: running it at once reports its error). */
  private writesSqlite(sqlite: SqliteHandle, text: string): boolean {
    try {
      return !this.preparedSqlite(sqlite, text).readonly;
    } catch {
      return false;
    }
  }

  /** A statement prepared on the connection, once per text. */
  private preparedSqlite(sqlite: SqliteHandle, text: string): SqliteStatement {
    let prepared = sqlite.prepared.get(text);
    if (!prepared) sqlite.prepared.set(text, (prepared = sqlite.db.prepare(text)));
    return prepared;
  }

  /** Runs a statement on SQLite now. */
  private execSqlite<Row>(sqlite: SqliteHandle, text: string, values: unknown[]): SqlResult<Row> {
    this.dataSource.logger.logQuery(text, values);
    try {
      const prepared = this.preparedSqlite(sqlite, text);
      if (!prepared.reader) return { rows: [], affected: prepared.run(...values).changes };
      const rows = prepared.all(...values) as Row[];
      return { rows, affected: rows.length };
    } catch (error) {
      this.dataSource.logger.logQueryError(error as Error, text, values);
      throw new QueryFailedError(text, values, error as Error);
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
    return this.enqueue(true, (sqlite) =>
      work(<Row>(statement: Statement, params: Record<string, unknown> = {}) => {
        const { text, values } = bindValues(statement, params, false);
        return this.execSqlite<Row>(sqlite, text, values);
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
      return this.enqueue(compiled.length > 1, (sqlite) => {
        const changed: number[] = [];
        for (const { text, values, onlyIfChanged } of compiled) {
          changed.push(onlyIfChanged && !changed.at(-1) ? 0 : this.execSqlite(sqlite, text, values).affected);
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
    const sqlite = await this.idleSqlite();
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
