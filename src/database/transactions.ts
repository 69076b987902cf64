import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm, type TypeOrmTransactionalAdapterOptions } from '@nestjs-cls/transactional-adapter-typeorm';
import { E_TIMEOUT, type MutexInterface, Mutex, withTimeout } from 'async-mutex';
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type DataSource,
  type EntityManager,
  type EntitySubscriberInterface,
  EventSubscriber,
  QueryFailedError,
  type QueryRunner,
} from 'typeorm';

/**
 * The one transaction API: `@nestjs-cls/transactional` over TypeORM. A unit of work is
 * `transactions.withTransaction(() => …)` on the injected `TransactionHost`; every repository call inside it, whoever makes it, runs on that unit's
 * `EntityManager` (`transactions.tx`) and commits or rolls back with it.
 */
export type Transactions = TransactionHost<TransactionalAdapterTypeOrm>;

/** How long a unit on SQLite waits for the connection's turn before it fails as unavailable. */
const SQLITE_TURN_WAIT_MS = 10_000;

/**
 * SQLite has one connection (TypeORM's better-sqlite3 driver), and a transaction awaits between its statements: a
 * statement of another request sent in that gap would run inside it and be rolled back with it. So on SQLite units
 * take turns on the connection (a mutex per data source), a statement outside any unit waits while a transaction is
 * open ({@link Open}), and a transaction opened outside the transaction API (TypeORM's own, or `save()`'s implicit
 * one) is refused. PostgreSQL's statements each take a pooled connection and need none of this.
 */
const turns = new WeakMap<DataSource, MutexInterface>();
/** The data source whose turn the current unit of work holds. */
const holding = new AsyncLocalStorage<DataSource>();

/** Whether a transaction is open on a SQLite data source's connection, and when it ends. */
class Open {
  private ended: Promise<void> | undefined;
  private end: (() => void) | undefined;

  get now(): boolean {
    return this.ended !== undefined;
  }

  begin(): void {
    this.ended ??= new Promise((resolve) => (this.end = resolve));
  }

  finish(): void {
    const end = this.end;
    this.ended = this.end = undefined;
    end?.();
  }

  /**
   * Resolves once no transaction is open (at once when none is); fails as busy after {@link SQLITE_TURN_WAIT_MS}
   * (a unit that awaits something waiting for it would otherwise never end).
   */
  async closed(): Promise<void> {
    const deadline = Date.now() + SQLITE_TURN_WAIT_MS;
    while (this.ended) {
      const left = deadline - Date.now();
      if (left <= 0) throw busy(E_TIMEOUT);
      const waiting = new AbortController();
      await Promise.race([this.ended, sleep(left, undefined, { ref: false, signal: waiting.signal }).catch(() => undefined)]);
      waiting.abort();
    }
  }
}
const opens = new WeakMap<DataSource, Open>();

function openOf(dataSource: DataSource): Open {
  let open = opens.get(dataSource);
  if (!open) opens.set(dataSource, (open = new Open()));
  return open;
}

function turnOf(dataSource: DataSource): MutexInterface {
  let turn = turns.get(dataSource);
  if (!turn) turns.set(dataSource, (turn = withTimeout(new Mutex(), SQLITE_TURN_WAIT_MS)));
  return turn;
}

function sqlite(dataSource: DataSource): boolean {
  return dataSource.options.type === 'better-sqlite3';
}

/** A wait for a turn that ran out, as the database's own "busy" error (answered 503 like an unavailable one). */
function busy(error: unknown): unknown {
  if (error !== E_TIMEOUT) return error;
  return new QueryFailedError('BEGIN', [], Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }));
}

/** The TypeORM adapter, with the turns above and {@link SqliteBatch}es on SQLite. */
export class TurnTakingTypeOrmAdapter extends TransactionalAdapterTypeOrm {
  constructor(options: TypeOrmTransactionalAdapterOptions) {
    super(options);
    const typeOrm = this.optionsFactory;
    this.optionsFactory = (dataSource: DataSource) => {
      const factory = typeOrm(dataSource);
      if (!sqlite(dataSource)) return factory;
      const batch = new SqliteBatch(dataSource);
      return { ...factory, wrapWithTransaction: (_options, fn, setClient) => batch.unit(fn, setClient) };
    };
  }
}

/**
 * SQLite's group commit, as part of the transaction API: units that wait for the connection's turn while another
 * runs share its transaction. Each unit runs on its turn, in its own async context, in a savepoint of the open
 * transaction (`BEGIN` for the first); one that fails is rolled back to its savepoint alone. The unit that ends with
 * nobody waiting commits, and every unit of the batch hears of its outcome only then. A commit writes each page it
 * changed to the WAL once, so one commit for many requests' units instead of one each is most of what a write costs
 * here (docs/performance.md). Nothing nests into a batch: it is open only while its units hold the turn.
 */
class SqliteBatch {
  /** Units waiting for the turn (they join the open transaction). */
  private waiting = 0;
  /** The units of the open transaction that ended well, waiting for its commit. */
  private done: { resolve: (value: unknown) => void; reject: (error: unknown) => void; value: unknown }[] = [];

  constructor(private readonly dataSource: DataSource) {}

  unit<T>(fn: () => Promise<T>, setClient: (client?: EntityManager) => void): Promise<T> {
    this.waiting++;
    return new Promise<T>((resolve, reject) => {
      turnOf(this.dataSource)
        .runExclusive(() => {
          this.waiting--;
          return holding.run(this.dataSource, () => this.run(fn, setClient, resolve as (value: unknown) => void, reject));
        })
        .catch((error: unknown) => {
          if (error !== E_TIMEOUT) return reject(error);
          this.waiting--;
          reject(busy(error));
          // The unit that left the batch open for this one ended it: a unit of nothing commits it.
          if (this.waiting === 0 && this.done.length > 0)
            void this.unit(
              () => Promise.resolve(),
              () => undefined,
            ).catch(() => undefined);
        });
    });
  }

  private async run<T>(
    fn: () => Promise<T>,
    setClient: (client?: EntityManager) => void,
    resolve: (value: unknown) => void,
    reject: (error: unknown) => void,
  ): Promise<void> {
    const runner = this.dataSource.createQueryRunner();
    try {
      if (!runner.isTransactionActive) {
        // The batch's first unit: the units other requests start in this turn of the event loop join it.
        await new Promise((resolve) => setImmediate(resolve));
        openOf(this.dataSource).begin();
        await runner.startTransaction(); // BEGIN
      }
      await runner.startTransaction(); // SAVEPOINT
    } catch (error) {
      reject(error);
      return this.endBatch(runner, error);
    }
    setClient(runner.manager);
    try {
      const value = await fn();
      await runner.commitTransaction(); // RELEASE
      this.done.push({ resolve, reject, value });
    } catch (error) {
      reject(error);
      try {
        await runner.rollbackTransaction(); // ROLLBACK TO: this unit's writes only
      } catch (lost) {
        return this.endBatch(runner, lost); // SQLite ended the whole transaction (an I/O error, say)
      }
    }
    if (this.waiting === 0) await this.endBatch(runner);
  }

  /** Commits the batch (or, after `failure`, rolls it back) and tells each of its units. */
  private async endBatch(runner: QueryRunner, failure?: unknown): Promise<void> {
    const units = this.done;
    this.done = [];
    try {
      if (failure === undefined) await runner.commitTransaction();
    } catch (error) {
      failure = error;
    }
    for (let tries = 0; failure !== undefined && runner.isTransactionActive && tries < 8; tries++) {
      await runner.rollbackTransaction().catch(() => undefined);
    }
    openOf(this.dataSource).finish();
    for (const unit of units) {
      if (failure === undefined) unit.resolve(unit.value);
      else unit.reject(failure);
    }
  }
}

/** Registered on every data source (DataSourceOptions.subscribers): enforces the SQLite turns. */
@EventSubscriber()
export class SqliteTurns implements EntitySubscriberInterface {
  beforeTransactionStart(event: { queryRunner: { connection: DataSource } }): void {
    const dataSource = event.queryRunner.connection;
    if (sqlite(dataSource) && holding.getStore() !== dataSource)
      throw new Error('On SQLite a transaction is opened through the transaction API (Transactions.withTransaction)');
  }

  /** A statement outside any unit waits until no transaction is open (then runs before any can open: see onTurn). */
  async beforeQuery(event: { queryRunner: { connection: DataSource } }): Promise<void> {
    const dataSource = event.queryRunner.connection;
    if (sqlite(dataSource) && holding.getStore() !== dataSource) await openOf(dataSource).closed();
  }
}

/**
 * `work` holding the data source's turn on SQLite (its migrations at start-up, which TypeORM runs in transactions
 * of its own); on PostgreSQL it just runs.
 */
export function withTurn<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  if (!sqlite(dataSource)) return work();
  return turnOf(dataSource).runExclusive(() => {
    openOf(dataSource).begin();
    return holding.run(dataSource, work).finally(() => openOf(dataSource).finish());
  });
}

/**
 * `work` (synchronous, on SQLite's connection, outside any unit) at once when no transaction is open on it, else once
 * it has ended; on PostgreSQL, or inside the unit holding the turn, at once. A transaction opens only a turn of the
 * event loop after its unit asked (see SqliteBatch), so a statement that found none open runs before one opens.
 */
export function onTurn<T>(dataSource: DataSource, work: () => T): T | Promise<T> {
  if (!sqlite(dataSource) || holding.getStore() === dataSource) return work();
  const open = openOf(dataSource);
  if (!open.now) return work();
  return open.closed().then(work);
}
