import pg, { type Client, type ClientConfig, type Pool, type QueryResult } from 'pg';
import { serialize } from 'pg-protocol';

/** The part of node-postgres' Query a batch takes over: pipeline mode takes no other kind of query object. */
interface PgQuery {
  name: string | undefined;
  text: string | undefined;
  /** Set by the client around a query with a `query_timeout`: called once when the query is done. */
  callback?: (error: unknown, result?: unknown) => void;
}
const Query = pg.Query as unknown as new (text: string) => PgQuery;
const { DatabaseError } = pg;
const { prepareValue } = (pg as unknown as { utils: { prepareValue(value: unknown): unknown } }).utils;

/** A named prepared statement with its values, as node-postgres takes it. */
export interface PreparedQuery {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * Connections of a pool's pipeline: the queries of one turn of the event loop share one of them. One: with batches,
 * a second connection (turns alternating between the two) gave 0.96x the flows/s (six pairs, code flow).
 */
const CONNECTIONS = 1;
/**
 * A batch is sent as soon as a query joins it this long after its first one, instead of at the end of the turn: in a
 * long turn (requests that sign tokens, say) PostgreSQL starts on the first statements sooner. 0.97x the service's
 * CPU per flow and 1.03x the flows/s on the code flow (0.15-0.3 ms alike; sending every query at once: 1.15x the CPU).
 */
const MAX_BATCH_WAIT_MS = 0.2;
/**
 * Queries a connection of the pipeline may have in flight; past that, a query goes to the pool. A statement that
 * waits (for a row lock a transaction holds, say) holds up the ones sent after it on its connection: this bounds
 * how many, and under overload the pool's wait limit (`connectionTimeoutMillis`) sheds load as before.
 */
const MAX_IN_FLIGHT = 32;
/**
 * PostgreSQL cancels a pipelined statement that runs (or waits for a lock) longer than this, failing it (the others
 * of its batch run again); the pool's `query_timeout`, which closes the connection and fails everything in flight
 * on it, stays the last resort for a server that stopped answering.
 */
const STATEMENT_TIMEOUT_MS = 5_000;

const pipelines = new WeakMap<Pool, PgPipeline>();

/** The pipeline of a data source's pool, made on first use and ended with the pool. */
export function pipelineOf(pool: Pool): PgPipeline {
  let pipeline = pipelines.get(pool);
  if (!pipeline) pipelines.set(pool, (pipeline = new PgPipeline(pool)));
  return pipeline;
}

/**
 * Single-statement queries of many requests on PostgreSQL connections of their own ({@link CONNECTIONS}), in
 * node-postgres' `pipeline` mode: a query is written without waiting for the answers to the ones before it. The
 * queries of one turn of the event loop go as one {@link Batch}, sent in one write once the turn's I/O callbacks are
 * done (or, in a long turn, once one joins {@link MAX_BATCH_WAIT_MS} after the first): PostgreSQL runs them in one
 * transaction, commits them with one WAL flush and sends their answers together, and each answers once that commit
 * is done. A query that fails still fails alone: its batch is rolled back and the others of it run again, each on
 * its own (see {@link Batch}).
 *
 * Why: through the pool, every statement took a connection, wrote its messages, woke its own idle backend and
 * waited for it alone. Pipelined, a turn's statements cost the service one write and the database one wake-up: on
 * the code flow (two statements per authorize + token, ten loops), 0.87× the service's CPU per flow and 0.75×
 * PostgreSQL's, 1.20× the flows per second (two builds side by side, medians of six pairs). One transaction per
 * batch instead of one per statement (about six statements per batch on that flow): 0.89× the service's CPU, 0.58×
 * PostgreSQL's, 1.07× the flows per second; not asking again for the columns of a statement the connection has run
 * before: 0.95× and 1.05× more.
 *
 * Only for statements that stand alone: a transaction of several statements (`SqlRunner.atomic`, TypeORM) keeps a
 * pooled connection to itself, and so does a statement marked `pooled` (one that may read many rows). A statement
 * that waits for a row lock holds the locks its batch took before it until it is done. A lost connection fails the
 * queries sent on it (as a pooled one fails its query) and the next query opens a new one. PostgreSQL cancels a
 * statement past {@link STATEMENT_TIMEOUT_MS}; a query past the pool's `query_timeout` closes its connection, failing
 * the others in flight on it. Behind PgBouncer this needs its transaction mode with prepared statements (1.21+).
 */
export class PgPipeline {
  private readonly lanes: Lane[];
  private turn = 0;
  /** The connection this turn's queries go to, until {@link endTurn} sends them. */
  private turnLane: Lane | undefined;
  private ended = false;
  private readonly endTurn = () => {
    const lane = this.turnLane;
    this.turnLane = undefined;
    lane?.send();
  };

  constructor(
    private readonly pool: Pool,
    { connections = CONNECTIONS, maxBatchWaitMs = MAX_BATCH_WAIT_MS }: { connections?: number; maxBatchWaitMs?: number } = {},
  ) {
    // pg-pool keeps the connection settings its clients are made with (the password as a hidden property).
    const { options, Client: PoolClient } = pool as unknown as {
      options?: ClientConfig;
      Client?: new (config: ClientConfig & { pipeline: boolean }) => Client;
    };
    if (!options || typeof PoolClient !== 'function') {
      // Not the pool this was written against: every query goes to the pool.
      this.lanes = [];
      this.ended = true;
      return;
    }
    const config = {
      ...options,
      password: options.password,
      keepAlive: true,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      pipeline: true,
    };
    const toPool = (query: PreparedQuery) => pool.query(query);
    this.lanes = Array.from({ length: connections }, () => new Lane(() => new PoolClient(config), toPool, maxBatchWaitMs));
    // The data source closes its pool when it is destroyed (shutdown, tests): the pipeline's connections go first.
    const endPool = pool.end.bind(pool) as () => Promise<void>;
    pool.end = ((callback?: (error?: Error) => void) => {
      const ended = this.end().then(endPool);
      if (!callback) return ended;
      ended.then(() => callback(), callback);
    }) as Pool['end'];
  }

  query(query: PreparedQuery): Promise<QueryResult> {
    if (this.ended || (this.pool as { ending?: boolean }).ending) return this.pool.query(query);
    let lane = this.turnLane;
    if (!lane) {
      lane = this.turnLane = this.lanes[this.turn++ % this.lanes.length];
      setImmediate(this.endTurn);
    }
    if (lane.inFlight >= MAX_IN_FLIGHT) return this.pool.query(query);
    return lane.query(query);
  }

  /** Closes the connections once the queries sent on them are answered; later queries go to the pool. */
  async end(): Promise<void> {
    this.ended = true;
    this.endTurn();
    await Promise.all(this.lanes.map((lane) => lane.end()));
  }
}

/** One pipelined connection, opened on first use and again after it is lost. */
class Lane {
  /** Queries sent (or waiting for the connection or the end of the turn) and not answered yet. */
  inFlight = 0;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  /** This turn's queries, sent together by {@link send}. */
  private batch: Batch | undefined;
  private readonly answered = () => {
    this.inFlight--;
  };
  private ended = false;
  /** Sends a query of a failed batch again, alone (with its own Sync); once the pipeline has ended, to the pool. */
  private readonly again = (query: PreparedQuery): Promise<QueryResult> => {
    if (this.ended) return this.toPool(query);
    // A batch of one, which does not run its query a third time.
    const alone = new Batch(undefined, 0);
    const result = alone.add(query);
    this.submit(alone);
    return result;
  };

  constructor(
    private readonly open: () => Client,
    private readonly toPool: (query: PreparedQuery) => Promise<QueryResult>,
    private readonly maxBatchWaitMs: number,
  ) {}

  query(query: PreparedQuery): Promise<QueryResult> {
    this.inFlight++;
    const now = performance.now();
    const batch = (this.batch ??= new Batch(this.again, now));
    const result = batch.add(query);
    result.then(this.answered, this.answered);
    if (now - batch.startedAt >= this.maxBatchWaitMs) this.send();
    return result;
  }

  /** Sends this turn's queries, in one write (once the connection is open). */
  send(): void {
    const batch = this.batch;
    this.batch = undefined;
    if (batch && batch.items.length > 0) this.submit(batch);
  }

  private submit(batch: Batch): void {
    // node-postgres takes the batch as a query of its own, and hands it the answers.
    if (this.client) void this.client.query(batch as never);
    else
      this.connect().then(
        (client) => void client.query(batch as never),
        (error: unknown) => batch.handleError(error),
      );
  }

  private connect(): Promise<Client> {
    if (this.connecting) return this.connecting;
    const client = this.open();
    const forget = () => {
      if (this.client === client) this.client = undefined;
      if (this.connecting === connecting) this.connecting = undefined;
    };
    // A connection lost while idle is forgotten (node-postgres fails the queries in flight on it).
    client.on('error', forget);
    client.on('end', forget);
    const connecting = client.connect().then(
      () => {
        // Unless it was lost or the pipeline ended meanwhile (then `end()` or the lost connection's end closes it).
        if (this.connecting === connecting) this.client = client;
        return client;
      },
      (error: unknown) => {
        forget();
        throw error;
      },
    );
    this.connecting = connecting;
    return connecting;
  }

  async end(): Promise<void> {
    this.ended = true;
    const connecting = this.connecting;
    this.client = undefined;
    this.connecting = undefined;
    const client = await connecting?.catch(() => undefined);
    await client?.end();
  }
}

/** What node-postgres' connection (`client.connection`) offers a query that writes its own messages. */
interface PgConnection {
  stream: { writable: boolean; write(data: Buffer): boolean };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  sendCopyFail(message: string): void;
}

/** The messages every statement of a batch sends alike: Describe (of the unnamed portal), Execute (all rows), Sync. */
const DESCRIBE_PORTAL = serialize.describe({ type: 'P', name: '' });
const EXECUTE = serialize.execute({});
const SYNC = serialize.sync();

/** A column of a RowDescription, as node-postgres reads it. */
interface Field {
  name: string;
  dataTypeID: number;
  format: 'text' | 'binary';
}

/** The columns a prepared statement returns, with the parser of each (as node-postgres' Result would pick them). */
interface Shape {
  fields: Field[];
  names: string[];
  parsers: ((value: string) => unknown)[];
}

/** SQLSTATE deadlock_detected. */
const DEADLOCK = '40P01';

/** A statement that returns no rows (PostgreSQL answered its Describe with NoData). */
const NO_ROWS: Shape = { fields: [], names: [], parsers: [] };

/**
 * The shape of each statement prepared on a connection, learnt from the Describe sent with its first run there:
 * later runs skip the Describe (and PostgreSQL its RowDescription), and their rows are read with the known parsers.
 */
const shapes = new WeakMap<PgConnection, Map<string, Shape>>();

function shapesOf(connection: PgConnection): Map<string, Shape> {
  let known = shapes.get(connection);
  if (!known) shapes.set(connection, (known = new Map()));
  return known;
}

/** The rows changed, read, or returned, from a CommandComplete tag (`INSERT 0 1`, `UPDATE 3`, `SELECT 1`). */
function rowCountOf(tag: string): number | null {
  const count = tag.slice(tag.lastIndexOf(' ') + 1);
  return /^\d+$/.test(count) ? Number(count) : null;
}

interface Item {
  query: PreparedQuery;
  /** The values as PostgreSQL's text format takes them, mapped when the query joined the batch. */
  values: unknown[];
  resolve(result: QueryResult): void;
  reject(error: unknown): void;
  /** The columns of the statement's rows: known, or learnt from the Describe sent with it. */
  shape: Shape | undefined;
  rows: Record<string, unknown>[];
  /** Whether this batch sent the statement's Parse (its first use on the connection). */
  parses: boolean;
  /** Whether it runs as the unnamed statement (see {@link Batch.submit}). */
  unnamed: boolean;
  /** A row that could not be read. */
  failure?: unknown;
  /** From the CommandComplete tag. */
  command?: string;
  rowCount?: number | null;
}

/**
 * The queries of one turn of the event loop on one pipelined connection, sent as one group of extended-protocol
 * messages with one Sync: PostgreSQL runs them in one implicit transaction, commits them together and sends all
 * the answers in one go, and each query answers (resolves) only once that commit is done. To node-postgres it is
 * one query (a subclass of its Query: pipeline mode takes no other), handed the answers of its statements in order.
 *
 * If one fails, PostgreSQL rolls the batch back and skips the rest. The failing query answers with its error; every
 * other query of the batch is sent again on its own (`retry`, its own Sync), so that it succeeds or fails as if it
 * had never shared a transaction. A deadlock is the exception: the batch holding its locks longer may have caused
 * it, so the failing query runs again alone too (a query sent again runs once more at most). A lost connection fails
 * them all, as it fails a query sent alone: whether the batch committed is unknown.
 */
class Batch extends Query {
  readonly items: Item[] = [];
  /** The query whose answers are arriving. */
  private current = 0;
  private done = false;
  /** The shapes known on the connection the batch went to. */
  private shapes: Map<string, Shape> | undefined;

  constructor(
    /** Sends a query of the batch again on its own; none for a batch that is itself a query sent again. */
    private readonly retry: ((query: PreparedQuery) => Promise<QueryResult>) | undefined,
    /** When its first query joined (`performance.now()`). */
    readonly startedAt: number,
  ) {
    // A string: node-postgres copies a config object, property by property.
    super('');
  }

  /**
   * node-postgres reads `name` and `text` of the query being answered: at ParseComplete it marks the statement
   * prepared on the connection, at an error it forgets it. They follow the query whose answers are arriving (none
   * for a query run as the unnamed statement).
   */
  private follow(index: number): void {
    this.current = index;
    const item = this.items[index];
    this.name = item?.unnamed ? undefined : item?.query.name;
    this.text = item?.unnamed ? undefined : item?.query.text;
  }

  add(query: PreparedQuery): Promise<QueryResult> {
    return new Promise((resolve, reject) => {
      let values: unknown[];
      try {
        values = query.values.map((value) => prepareValue(value));
      } catch (error) {
        // A value PostgreSQL cannot take fails its query before anything is sent.
        reject(error);
        return;
      }
      this.items.push({ query, values, resolve, reject, shape: undefined, rows: [], parses: false, unnamed: false });
    });
  }

  submit(connection: PgConnection): null {
    const { parsedStatements: parsed, submittedNamedStatements: submitted, stream } = connection;
    this.shapes = shapesOf(connection);
    // The batch's messages in one buffer and one write (through node-postgres' `connection.parse()` and the like,
    // each message is a write of its own, gathered by corking: 0.97x the CPU per flow this way).
    const messages: Buffer[] = [];
    // The statements this batch parses (a connection's first batches only).
    let parsing: Set<string> | undefined;
    for (const item of this.items) {
      const { name, text } = item.query;
      if (parsed[name] === undefined && !parsing?.has(name)) {
        if (submitted[name] === undefined) {
          messages.push(serialize.parse({ name, text }));
          submitted[name] = text;
          (parsing ??= new Set()).add(name);
          item.parses = true;
          this.shapes.delete(name);
        } else {
          // Its Parse went in an earlier batch, not answered yet: if something before it there fails, PostgreSQL
          // skips it. Until it is known to be prepared, the statement runs as the unnamed one (parsed each time).
          messages.push(serialize.parse({ name: '', text }));
          item.unnamed = true;
        }
      }
      messages.push(serialize.bind({ statement: item.unnamed ? '' : name, values: item.values }));
      item.shape = this.shapes.get(name);
      if (!item.shape) messages.push(DESCRIBE_PORTAL);
      messages.push(EXECUTE);
    }
    messages.push(SYNC);
    // As node-postgres' own writes: nothing is written to a stream that has ended (the client fails its queries).
    if (stream.writable) stream.write(Buffer.concat(messages));
    this.follow(0);
    return null;
  }

  handleRowDescription(message: { fields: Field[] }): void {
    const item = this.items[this.current];
    const { fields } = message;
    item.shape = {
      fields,
      names: fields.map((field) => field.name),
      parsers: fields.map((field) => pg.types.getTypeParser(field.dataTypeID, field.format)),
    };
    this.shapes?.set(item.query.name, item.shape);
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    const item = this.items[this.current];
    const { names, parsers } = item.shape ?? NO_ROWS;
    const values = message.fields;
    const row: Record<string, unknown> = {};
    try {
      for (let i = 0; i < values.length; i++) {
        const value = values[i];
        row[names[i]] = value === null ? null : parsers[i](value);
      }
    } catch (error) {
      // A value the type parser cannot read fails its query (as node-postgres' Query does), not the others.
      item.failure ??= error;
    }
    item.rows.push(row);
  }

  handleCommandComplete(message: { text: string }): void {
    const item = this.items[this.current];
    if (!item.shape) this.shapes?.set(item.query.name, (item.shape = NO_ROWS));
    item.rowCount = rowCountOf(message.text);
    item.command = message.text.split(' ', 1)[0];
    this.follow(this.current + 1);
  }

  handleEmptyQuery(): void {
    this.follow(this.current + 1);
  }

  handleReadyForQuery(): void {
    if (this.done) return;
    this.done = true;
    this.callback?.(null);
    for (const item of this.items) {
      if (item.failure !== undefined) item.reject(item.failure);
      else
        item.resolve({
          command: item.command,
          rowCount: item.rowCount,
          oid: 0,
          fields: item.shape?.fields ?? [],
          rows: item.rows,
        } as QueryResult);
    }
  }

  handleError(error: unknown, connection?: PgConnection): void {
    if (this.done) return;
    this.done = true;
    this.callback?.(error);
    const failed = this.current;
    // PostgreSQL skipped the Parse of the statements after the failing one: they are not prepared.
    for (let i = failed + 1; i < this.items.length; i++) {
      if (this.items[i].parses && connection) delete connection.submittedNamedStatements[this.items[i].query.name];
    }
    // An error PostgreSQL answered while the batch was the query being answered (before its ReadyForQuery): its
    // transaction did not commit, whatever the severity (a connection lost instead, or one that never opened, leaves
    // it unknown whether the batch committed).
    const retry = error instanceof DatabaseError && connection ? this.retry : undefined;
    // The failing statement's error is its answer, but a deadlock, which the batch's locks may have made.
    const again = error instanceof DatabaseError && error.code === DEADLOCK;
    this.items.forEach((item, i) => {
      if (!retry || (i === failed && !again)) item.reject(error);
      else retry(item.query).then(item.resolve, item.reject);
    });
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('COPY is not supported in the pipeline');
  }

  handleCopyData(): void {}
}
