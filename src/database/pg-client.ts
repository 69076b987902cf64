import pg from 'pg';

/**
 * node-postgres' client with an `error` listener from the moment it exists, given to the pool through its
 * documented `Client` option. A connection the server ends (a restart: 57P01, or a terminated backend) emits
 * `error` on its client; checked out of the pool with no listener of its own (between the statements of a
 * transaction, say), that event would be unhandled and end the process. The error also fails every query in flight
 * on the client, and the pool drops the client when it is released, so the listener has nothing more to do.
 */
export class ListenedClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}
