import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm, type TypeOrmTransactionalAdapterOptions } from '@nestjs-cls/transactional-adapter-typeorm';
import { E_TIMEOUT, type MutexInterface, Mutex, withTimeout } from 'async-mutex';
import { AsyncLocalStorage } from 'node:async_hooks';
import { type DataSource, type EntitySubscriberInterface, EventSubscriber, QueryFailedError } from 'typeorm';

/**
 * The one transaction API: `@nestjs-cls/transactional` over TypeORM. A unit of work is
 * `transactions.withTransaction(() => …)` on the injected `TransactionHost`; every repository call inside it, whoever makes it, runs on that unit's
 * `EntityManager` (`transactions.tx`) and commits or rolls back with it.
 */
export type Transactions = TransactionHost<TransactionalAdapterTypeOrm>;

/** How long a statement on SQLite waits for another unit's turn on the connection before it fails as unavailable. */
const SQLITE_TURN_WAIT_MS = 10_000;

/**
 * SQLite has one connection (TypeORM's better-sqlite3 driver), and a transaction awaits between its statements: a
 * statement of another request sent in that gap would run inside it and be rolled back with it. So each data source
 * has turns on its connection: a unit of work holds the turn from `BEGIN` to `COMMIT`, any other statement takes
 * the turn for itself alone, and a transaction opened outside the transaction API (TypeORM's own, or `save()`'s
 * implicit one) is refused. PostgreSQL's statements each take a pooled connection and need none of this.
 */
const turns = new WeakMap<DataSource, MutexInterface>();
/** The data source whose turn the current unit of work holds. */
const holding = new AsyncLocalStorage<DataSource>();
/** The release of the turn a single statement took (statements outside units run one at a time). */
const statementTurn = new WeakMap<DataSource, MutexInterface.Releaser>();

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

/** The TypeORM adapter, with the turns above on SQLite. */
export class TurnTakingTypeOrmAdapter extends TransactionalAdapterTypeOrm {
  constructor(options: TypeOrmTransactionalAdapterOptions) {
    super(options);
    const typeOrm = this.optionsFactory;
    this.optionsFactory = (dataSource: DataSource) => {
      const factory = typeOrm(dataSource);
      if (!sqlite(dataSource)) return factory;
      return {
        ...factory,
        wrapWithTransaction: (options, fn, setClient) =>
          turnOf(dataSource)
            .runExclusive(() => holding.run(dataSource, () => factory.wrapWithTransaction(options, fn, setClient)))
            .catch((error: unknown) => Promise.reject(busy(error))),
      };
    };
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

  async beforeQuery(event: { queryRunner: { connection: DataSource } }): Promise<void> {
    const dataSource = event.queryRunner.connection;
    if (!sqlite(dataSource) || holding.getStore() === dataSource) return;
    try {
      statementTurn.set(dataSource, await turnOf(dataSource).acquire());
    } catch (error) {
      throw busy(error);
    }
  }

  afterQuery(event: { queryRunner: { connection: DataSource } }): void {
    const dataSource = event.queryRunner.connection;
    if (!sqlite(dataSource) || holding.getStore() === dataSource) return;
    const release = statementTurn.get(dataSource);
    statementTurn.delete(dataSource);
    release?.();
  }
}

/**
 * `work` holding the data source's turn on SQLite (its migrations at start-up, which TypeORM runs in transactions
 * of its own); on PostgreSQL it just runs.
 */
export function withTurn<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  if (!sqlite(dataSource)) return work();
  return turnOf(dataSource).runExclusive(() => holding.run(dataSource, work));
}
