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
  transaction<A extends unknown[], T>(fn: (...args: A) => T): { (...args: A): T; immediate(...args: A): T };
}

/** The connection's methods that run SQL for others (TypeORM, migrations, the locked writes): each flushes the queued writes first. */
const FOREIGN_ENTRY_POINTS = ['exec', 'pragma', 'close', 'backup', 'serialize'] as const;
/** The methods of a statement prepared by others that run it. */
const STATEMENT_RUNS = new Set<PropertyKey>(['run', 'all', 'get', 'iterate']);
/** Statements the hot paths prepared, per connection, by text (bounded like TypeORM's own cache). */
const CACHE_SIZE = 200;

const groups = new WeakMap<SqliteConnection, SqliteGroupCommit>();
/**
 * Turns of the event loop a batch stays open after the one its first write came in, while each adds writes to it.
 * Under load the requests answered by one flush send their next requests together, and those find the batch still
 * open: on the code flow with ten loops, batches of 5.6 writes became 8.5, and a commit's pages are shared by more
 * writes. A write that comes alone waits one more turn of the loop: microseconds when the process has nothing else
 * to do, else the time of that turn's callbacks.
 */
const MAX_EXTRA_TURNS = 2;

/**
 * Group commit for the embedded SQLite database: the hot paths' writes are queued and run together in one
 * transaction once the turn of the event loop they came in is done (`setImmediate`) and the next turns add no more
 * (at most {@link MAX_EXTRA_TURNS} more); each caller gets its result once that transaction is committed, so a
 * response never reports a write that is not committed.
 *
 * Why: a commit in WAL mode appends every page the transaction changed to the log, two `pwrite`s per page. A code
 * issue changes about 16 pages (three tables, their ten indexes); issued alone it costs about 105 µs of CPU,
 * two thirds of it in the kernel. Four of them in one transaction share the tables' and indexes' right-hand pages:
 * 67 µs each, 46 µs in a batch of sixteen (measured on the service's own schema). The statement journal a
 * statement in a transaction keeps stays in memory (`temp_store = MEMORY`), or batching would cost more than it saves.
 *
 * Rules that keep it correct:
 * - Writes wait in the queue; the write lock is taken only for the flush, which runs them and commits without
 *   yielding (another process sharing the file waits microseconds, as for single statements). Reads run at once
 *   and see only committed data.
 * - A failing statement is undone alone (SQLite's statement journal) and fails its caller only; one that ends the
 *   whole transaction (full disk, I/O error) fails every caller of the batch, as does a failed COMMIT.
 * - Everything else that uses the connection — TypeORM's queries and transactions, migrations, closing — first
 *   flushes the queue: the connection's entry points and the statements others prepare are wrapped once, when the
 *   connection opens (data-source-options.ts), before TypeORM prepares and caches any statement.
 * - Inside a transaction of someone else on this connection (TypeORM awaiting between its statements), a write
 *   runs as part of it and answers at once, as without batching.
 */
export class SqliteGroupCommit {
  /**
   * The group whose queue holds writes, if any: one per process. Another connection to the same file in this
   * process (tests run several instances in one) could otherwise find the write lock taken by this one while
   * waiting synchronously in SQLite's busy handler: each flush and each foreign use first flushes it.
   */
  private static queued: SqliteGroupCommit | undefined;
  private queue: Array<{ work: () => unknown; settle: (value: unknown) => void; fail: (error: unknown) => void }> = [];
  private readonly cache = new Map<string, SqliteStatement>();
  private readonly prepareOwn: (text: string) => SqliteStatement;
  private readonly begin: SqliteStatement;
  private readonly commit: SqliteStatement;
  private readonly rollback: SqliteStatement;
  /** better-sqlite3's transaction function, made once: `transaction()` builds four wrappers on every call (6 µs alone). */
  private readonly savepoint: (work: () => unknown) => unknown;
  /** Whether a turn's end (`flushSoon`) is scheduled: at most one at a time. */
  private flushScheduled = false;
  /** Turns the open batch has waited beyond its first, and its size at the end of the last one. */
  private extraTurns = 0;
  private sizeAtLastTurn = 0;
  /** The end of a turn with writes queued: wait one more turn if this one added writes (see MAX_EXTRA_TURNS), else flush. */
  private readonly flushSoon = () => {
    this.flushScheduled = false;
    if (SqliteGroupCommit.queued !== this) return; // flushed meanwhile by another use of the connection
    const size = this.queue.length;
    if (size > this.sizeAtLastTurn && this.extraTurns < MAX_EXTRA_TURNS) {
      this.extraTurns++;
      this.sizeAtLastTurn = size;
      this.scheduleFlush();
    } else {
      this.flush();
    }
  };
  private stuck = false;

  private constructor(private readonly db: SqliteConnection) {
    const prepare = db.prepare.bind(db);
    this.prepareOwn = prepare;
    this.begin = prepare('BEGIN IMMEDIATE');
    this.commit = prepare('COMMIT');
    this.rollback = prepare('ROLLBACK');
    this.savepoint = db.transaction((work: () => unknown) => work());
    this.wrapForeignUse(prepare);
  }

  /** The group of a connection, created (and the connection's other entry points wrapped) on first use. */
  static of(db: SqliteConnection): SqliteGroupCommit {
    let group = groups.get(db);
    if (!group) groups.set(db, (group = new SqliteGroupCommit(db)));
    return group;
  }

  /** A statement of the hot paths, prepared once per connection; runs without flushing the queue. */
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
   * Runs `work` (synchronous statements on this connection): a read at once; a write (`writes`) in the next flush,
   * resolving with its result once that is committed.
   */
  run<T>(work: () => T, writes: boolean): Promise<T> {
    if (this.stuck) {
      this.rollBack();
      if (this.stuck) return Promise.reject(new Error('the SQLite connection is stuck in a transaction it could not roll back'));
    }
    if (!writes || this.db.inTransaction) {
      // A read, or a write inside someone else's transaction on this connection: now, as without batching (the
      // other connection's queue first: its flush must not find this connection holding the write lock).
      if (writes && SqliteGroupCommit.queued !== this) SqliteGroupCommit.flushQueued();
      try {
        return Promise.resolve(work());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (SqliteGroupCommit.queued !== this) {
      SqliteGroupCommit.flushQueued();
      SqliteGroupCommit.queued = this;
      this.scheduleFlush();
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, settle: resolve as (value: unknown) => void, fail: reject });
    });
  }

  /**
   * Runs `work` as one unit, all or none: inside the batch's transaction (where a write runs) better-sqlite3 makes
   * it a savepoint, rolled back to if `work` throws; outside any transaction, a transaction of its own.
   */
  unit<T>(work: () => T): T {
    return this.savepoint(work) as T;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flushSoon);
  }

  /** Runs and commits the process's queued writes, if any, and answers their callers. */
  static flushQueued(): void {
    SqliteGroupCommit.queued?.flush();
  }

  /** Runs this connection's queued writes in one transaction, commits, and answers their callers. */
  private flush(): void {
    if (SqliteGroupCommit.queued !== this) return;
    const queue = this.queue;
    SqliteGroupCommit.queued = undefined;
    this.queue = [];
    this.extraTurns = 0;
    this.sizeAtLastTurn = 0;
    try {
      this.begin.run();
    } catch (error) {
      for (const { fail } of queue) fail(error);
      return;
    }
    const results: unknown[] = [];
    for (let i = 0; i < queue.length; i++) {
      try {
        results[i] = queue[i].work();
      } catch (error) {
        queue[i].fail(error); // (its promise is settled: a later settle or fail of it does nothing)
        // A statement that took the whole transaction with it (SQLite rolls back on a full disk or an I/O error):
        // what ran before it is gone, what comes after is not run.
        if (!this.db.inTransaction) return this.failAll(queue, error);
      }
    }
    try {
      this.commit.run();
    } catch (error) {
      this.rollBack();
      return this.failAll(queue, error);
    }
    queue.forEach(({ settle }, i) => settle(results[i]));
  }

  private failAll(queue: Array<{ fail: (error: unknown) => void }>, error: unknown): void {
    for (const { fail } of queue) fail(error);
  }

  /**
   * Undoes a batch whose COMMIT failed. If even the ROLLBACK fails, the connection is marked stuck: later writes
   * fail (after trying the ROLLBACK again) instead of running inside a transaction nobody will commit.
   */
  private rollBack(): void {
    try {
      if (this.db.inTransaction) this.rollback.run();
    } catch {
      // Checked below.
    }
    this.stuck = this.db.inTransaction;
  }

  /** Makes every other use of the connection flush the queued writes first. */
  private wrapForeignUse(prepareOwn: (text: string) => SqliteStatement): void {
    const db = this.db as unknown as Record<string, unknown>;
    for (const name of FOREIGN_ENTRY_POINTS) {
      const original = db[name];
      if (typeof original !== 'function') continue;
      db[name] = (...args: unknown[]) => {
        SqliteGroupCommit.flushQueued();
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
            if (runs) SqliteGroupCommit.flushQueued();
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
