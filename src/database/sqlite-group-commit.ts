/** A prepared statement of better-sqlite3 (only what is used here). */
export interface SqliteStatement {
  readonly reader: boolean;
  readonly readonly: boolean;
  all(...values: unknown[]): unknown[];
  run(...values: unknown[]): { changes: number };
}

/** The better-sqlite3 connection under TypeORM's driver (only what is used here). */
export interface SqliteConnection {
  inTransaction: boolean;
  prepare(text: string): SqliteStatement;
  transaction<T>(fn: () => T): { (): T; immediate(): T };
}

/** The connection's methods that run SQL for others (TypeORM, migrations, the locked writes): each commits the open batch first. */
const FOREIGN_ENTRY_POINTS = ['exec', 'pragma', 'close', 'backup', 'serialize'] as const;
/** The methods of a statement prepared by others that run it. */
const STATEMENT_RUNS = new Set<PropertyKey>(['run', 'all', 'get', 'iterate']);
/** Statements the hot paths prepared, per connection, by text (bounded like TypeORM's own cache). */
const CACHE_SIZE = 200;

const groups = new WeakMap<SqliteConnection, SqliteGroupCommit>();

/**
 * Group commit for the embedded SQLite database: the hot paths' statements of one turn of the event loop run in
 * one transaction, committed when the turn's I/O callbacks are done (`setImmediate`), and each caller gets its
 * result only after that commit — so a response never reports a write that is not durable, and nothing is lost
 * that a client was told happened.
 *
 * Why: a commit in WAL mode appends every page the transaction changed to the log, two `pwrite`s per page. A code
 * issue changes about 16 pages (three tables, their ten indexes); issued alone it costs about 105 µs of CPU,
 * two thirds of it in the kernel. Four of them in one transaction share the tables' and indexes' right-hand pages:
 * 67 µs each, 46 µs in a batch of sixteen (measured on the service's own schema). The statement journal a
 * statement in a transaction keeps stays in memory (`temp_store = MEMORY`), or batching would cost more than it saves.
 *
 * Rules that keep it correct:
 * - Reads join an open batch (so that no response shows another request's uncommitted write) but never open one.
 * - A failing statement is undone alone (SQLite's statement journal); one that ends the whole transaction (full
 *   disk, I/O error) fails every caller of the batch, as does a failed COMMIT.
 * - Everything else that uses the connection — TypeORM's queries and transactions, migrations, closing — first
 *   commits the open batch: the connection's entry points and the statements others prepare are wrapped once,
 *   when the connection opens (data-source-options.ts), before TypeORM prepares and caches any statement.
 * - Inside a transaction of someone else (TypeORM awaiting between its statements), a statement runs as part of
 *   it and answers at once, as without batching.
 */
export class SqliteGroupCommit {
  /**
   * The group whose batch is open, if any: one per process. A second connection to the same file in this process
   * (tests run several instances in one) would otherwise wait for the first's write lock synchronously, in the
   * busy handler, while the commit that frees it waits for the event loop: each batch and each foreign use first
   * commits the open one, whichever connection it is on.
   */
  private static openGroup: SqliteGroupCommit | undefined;
  private pending: Array<{ settle: () => void; fail: (error: unknown) => void }> = [];
  private readonly cache = new Map<string, SqliteStatement>();
  private readonly prepareOwn: (text: string) => SqliteStatement;
  private readonly begin: SqliteStatement;
  private readonly commit: SqliteStatement;
  private readonly rollback: SqliteStatement;
  private readonly commitSoon = () => this.flush();

  private constructor(private readonly db: SqliteConnection) {
    const prepare = db.prepare.bind(db);
    this.prepareOwn = prepare;
    this.begin = prepare('BEGIN IMMEDIATE');
    this.commit = prepare('COMMIT');
    this.rollback = prepare('ROLLBACK');
    this.wrapForeignUse(prepare);
  }

  /** The group of a connection, created (and the connection's other entry points wrapped) on first use. */
  static of(db: SqliteConnection): SqliteGroupCommit {
    let group = groups.get(db);
    if (!group) groups.set(db, (group = new SqliteGroupCommit(db)));
    return group;
  }

  /** A statement of the hot paths, prepared once per connection; runs without committing the batch. */
  statement(text: string): SqliteStatement {
    let statement = this.cache.get(text);
    if (!statement) {
      statement = this.prepareOwn(text);
      this.cache.set(text, statement);
      if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    }
    return statement;
  }

  /**
   * Runs `work` (synchronous statements on this connection) in the open batch, opening one when `writes` and none
   * is open; resolves with its result once the batch is committed. Outside a batch a read answers at once.
   */
  run<T>(work: () => T, writes: boolean): Promise<T> {
    if (SqliteGroupCommit.openGroup !== this && (!writes || this.db.inTransaction)) {
      try {
        return Promise.resolve(work());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (SqliteGroupCommit.openGroup !== this) {
      SqliteGroupCommit.flushOpen();
      try {
        this.begin.run();
      } catch (error) {
        return Promise.reject(error);
      }
      SqliteGroupCommit.openGroup = this;
      setImmediate(this.commitSoon);
    }
    return new Promise<T>((resolve, reject) => {
      let value: T;
      try {
        value = work();
      } catch (error) {
        // A statement that took the whole transaction with it (SQLite rolls back on a full disk or an I/O error).
        if (!this.db.inTransaction) this.abandon(error);
        reject(error);
        return;
      }
      this.pending.push({ settle: () => resolve(value), fail: reject });
    });
  }

  /** Commits the process's open batch, if any, and answers its callers. */
  static flushOpen(): void {
    SqliteGroupCommit.openGroup?.flush();
  }

  /** Commits this connection's open batch (if any) and answers its callers. */
  private flush(): void {
    if (SqliteGroupCommit.openGroup !== this) return;
    const pending = this.pending;
    SqliteGroupCommit.openGroup = undefined;
    this.pending = [];
    try {
      this.commit.run();
    } catch (error) {
      if (this.db.inTransaction) this.rollback.run();
      for (const { fail } of pending) fail(error);
      return;
    }
    for (const { settle } of pending) settle();
  }

  private abandon(error: unknown): void {
    const pending = this.pending;
    SqliteGroupCommit.openGroup = undefined;
    this.pending = [];
    for (const { fail } of pending) fail(error);
  }

  /** Makes every other use of the connection commit the open batch first. */
  private wrapForeignUse(prepareOwn: (text: string) => SqliteStatement): void {
    const db = this.db as unknown as Record<string, unknown>;
    for (const name of FOREIGN_ENTRY_POINTS) {
      const original = db[name];
      if (typeof original !== 'function') continue;
      db[name] = (...args: unknown[]) => {
        SqliteGroupCommit.flushOpen();
        return (original as (...a: unknown[]) => unknown).apply(this.db, args);
      };
    }
    db.prepare = (text: string) => {
      const proxy: SqliteStatement = new Proxy(prepareOwn(text), {
        get: (target, property) => {
          const value = Reflect.get(target, property, target) as unknown;
          if (typeof value !== 'function') return value;
          const runs = STATEMENT_RUNS.has(property);
          return (...args: unknown[]) => {
            if (runs) SqliteGroupCommit.flushOpen();
            const result = (value as (...a: unknown[]) => unknown).apply(target, args);
            // pluck(), raw(), bind() ... return the statement: keep handing out the wrapped one.
            return result === target ? proxy : result;
          };
        },
      });
      return proxy;
    };
  }
}
