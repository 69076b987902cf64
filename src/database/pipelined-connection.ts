import pg from 'pg';
import { ListenedClient } from './pg-client';

/**
 * Queries one pipelined connection may have in flight; past that a query goes to the pool. Pipelined queries are
 * answered in order, so one that waits (for a row lock, say) holds up those sent after it: this bounds how many.
 */
const MAX_IN_FLIGHT = 32;
/** PostgreSQL cancels a statement on the pipelined connection that runs or waits longer than this. */
const STATEMENT_TIMEOUT_MS = 5_000;

/**
 * One connection in node-postgres' documented pipeline mode (`new Client({ pipeline: true })`), for single
 * statements that stand alone: each is sent without waiting for the answers to those before it, and is its own
 * transaction (its own Sync), so it commits, fails or times out alone; no transaction ever spans requests. A lost
 * connection fails the queries in flight on it (as a pooled one fails its query) and the next query opens a new one.
 */
export class PipelinedConnection {
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private inFlight = 0;
  private ended = false;

  constructor(private readonly config: pg.ClientConfig) {}

  /** The query's result, or undefined when the connection is full or closed (the caller uses the pool). */
  query(query: pg.QueryConfig): Promise<pg.QueryResult> | undefined {
    if (this.ended || this.inFlight >= MAX_IN_FLIGHT) return undefined;
    this.inFlight++;
    const client = this.client;
    const sent = client ? client.query(query) : this.connect().then((connected) => connected.query(query));
    return sent.finally(() => this.inFlight--);
  }

  async end(): Promise<void> {
    this.ended = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private connect(): Promise<pg.Client> {
    this.connecting ??= (async () => {
      const client = new ListenedClient({ ...this.config, pipeline: true, statement_timeout: STATEMENT_TIMEOUT_MS, keepAlive: true });
      const forget = () => {
        if (this.client === client) this.client = undefined;
      };
      client.on('error', forget);
      client.on('end', forget);
      try {
        await client.connect();
      } finally {
        this.connecting = undefined;
      }
      if (this.ended) {
        await client.end();
        throw new Error('Client was closed and is not queryable');
      }
      this.client = client;
      return client;
    })();
    return this.connecting;
  }
}

/**
 * Pipelined connections a data source keeps: statements alternate between them, so that one's commit (a WAL flush)
 * overlaps the other's statements (see docs/performance.md).
 */
const CONNECTIONS = 2;

/** A few {@link PipelinedConnection}s; each query goes to the next one in turn. */
export class PipelinedConnections {
  private readonly connections: PipelinedConnection[];
  private next = 0;

  constructor(config: pg.ClientConfig) {
    this.connections = Array.from({ length: CONNECTIONS }, () => new PipelinedConnection(config));
  }

  query(query: pg.QueryConfig): Promise<pg.QueryResult> | undefined {
    const connection = this.connections[this.next];
    this.next = (this.next + 1) % this.connections.length;
    return connection.query(query);
  }

  async end(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.end()));
  }
}
