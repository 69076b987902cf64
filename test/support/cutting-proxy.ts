import { type Server, type Socket, connect, createServer } from 'node:net';

/** PostgreSQL's ReadyForQuery message with the status "idle": the end of a committed (or single) transaction's answer. */
const READY_AND_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

interface Cut {
  marker: Buffer;
  /**
   * `after-commit`: the answers on the marked connection pass until the one that ends its transaction (ReadyForQuery,
   * idle), which is swallowed; `before-server`: the request is.
   */
  when: 'after-commit' | 'before-server';
  /** Requests carrying the marker to let through before the one that is cut. */
  skip: number;
  /** Whether the database then stays away (every connection closed, new ones refused) until {@link CuttingProxy.up}. */
  thenDown: boolean;
  done: () => void;
}

/**
 * A TCP proxy in front of a PostgreSQL server that can cut one connection at a chosen moment: the connection that
 * sends a given marker (a value bound to a statement) is closed either once the server has committed the transaction
 * of that statement (and the client never hears so) or before the request reaches the server.
 */
export class CuttingProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private cut: Cut | undefined;
  private down = false;
  port = 0;

  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => this.accept(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Arms one cut, at the request carrying `marker` after `skip` others did; resolves once it happened. */
  cutOnce(marker: string, when: Cut['when'], skip = 0, thenDown = false): Promise<void> {
    return new Promise((done) => (this.cut = { marker: Buffer.from(marker), when, skip, thenDown, done }));
  }

  /** Lets connections through again after a cut that took the database away. */
  up(): void {
    this.down = false;
  }

  private goDown(): void {
    this.down = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(client: Socket): void {
    if (this.down) {
      client.destroy();
      return;
    }
    const upstream = connect(this.targetPort, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    let marked: Cut | undefined;
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('data', (chunk: Buffer) => {
      const cut = this.cut;
      if (!marked && cut && chunk.includes(cut.marker) && cut.skip-- === 0) {
        this.cut = undefined;
        marked = cut;
        if (cut.when === 'before-server') {
          end();
          if (cut.thenDown) this.goDown();
          cut.done();
          return;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!marked) {
        client.write(chunk);
        return;
      }
      if (chunk.includes(READY_AND_IDLE)) {
        end();
        if (marked.thenDown) this.goDown();
        marked.done();
      } else client.write(chunk);
    });
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  }
}
