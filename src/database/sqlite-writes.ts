import type { Database, Statement as SqliteStatement } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DataSource, QueryFailedError } from 'typeorm';
import { handlesOf } from './connections';
import type { SqlResult } from './statement';

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
export interface SqliteHandle {
  db: Database;
  prepared: LRUCache<string, SqliteStatement>;
  /** A transaction of its own, or a savepoint inside the batch's (better-sqlite3 nests them so). */
  transaction: (work: () => unknown) => unknown;
  /** One `BEGIN IMMEDIATE` transaction around a batch of units (see {@link SqliteWrites.enqueue}). */
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
 * The SQLite side of {@link SqlRunner}: its statements run synchronously on the data source's one connection,
 * each prepared once, and its writes are committed in batches (see {@link SqlRunner}).
 */
export class SqliteWrites {
  private current: SqliteHandle | undefined;
  /** The units waiting for the next batch, and whether it is scheduled. */
  private queued: SqliteUnit[] = [];
  private batchScheduled = false;
  /** The queue's length at the last turn the batch was held open, and how many turns it has been. */
  private heldAt = 0;
  private turnsHeld = 0;

  constructor(private readonly dataSource: DataSource) {}

  /** The SQLite connection once no transaction is open on it (one of TypeORM's, between its statements). */
  async idle(): Promise<SqliteHandle> {
    const sqlite = this.handle();
    if (!sqlite.db.inTransaction) return sqlite;
    const deadline = Date.now() + SQLITE_BUSY_WAIT_MS;
    while (sqlite.db.inTransaction) {
      if (Date.now() > deadline)
        throw new QueryFailedError('BEGIN', [], Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
      await sleep(1);
    }
    return sqlite;
  }

  /** The connection with its prepared statements, made again when the data source has a new connection. */
  handle(): SqliteHandle {
    const db = handlesOf(this.dataSource).sqlite;
    if (!db || !db.open) throw new QueryFailedError('', [], new Error('The database connection is not open'));
    if (this.current?.db !== db) {
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
      this.current = handle;
    }
    return this.current;
  }

  /**
   * Queues `work` (synchronous, on the connection) for the next batch; resolves with its result once the batch has
   * committed, or rejects with its error (then none of its writes stay).
   */
  enqueue<T>(several: boolean, work: (sqlite: SqliteHandle) => T): Promise<T> {
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
      sqlite = await this.idle();
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
  writes(sqlite: SqliteHandle, text: string): boolean {
    try {
      return !this.prepared(sqlite, text).readonly;
    } catch {
      return false;
    }
  }

  /** A statement prepared on the connection, once per text. */
  private prepared(sqlite: SqliteHandle, text: string): SqliteStatement {
    let prepared = sqlite.prepared.get(text);
    if (!prepared) sqlite.prepared.set(text, (prepared = sqlite.db.prepare(text)));
    return prepared;
  }

  /** Runs a statement on SQLite now. */
  exec<Row>(sqlite: SqliteHandle, text: string, values: unknown[]): SqlResult<Row> {
    this.dataSource.logger.logQuery(text, values);
    try {
      const prepared = this.prepared(sqlite, text);
      if (!prepared.reader) return { rows: [], affected: prepared.run(...values).changes };
      const rows = prepared.all(...values) as Row[];
      return { rows, affected: rows.length };
    } catch (error) {
      this.dataSource.logger.logQueryError(error as Error, text, values);
      throw new QueryFailedError(text, values, error as Error);
    }
  }
}
