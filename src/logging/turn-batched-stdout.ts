import type { DestinationStream } from 'pino';

/**
 * stdout, the lines of one turn of the event loop written together: the stream is corked at a turn's first line and
 * uncorked when the turn is over, so Node hands them to the system in one writev (Node's documented cork/uncork, on
 * `process.stdout`, which is asynchronous on pipes and sockets). pino's own asynchronous destination (sonic-boom)
 * measures the UTF-8 length of its whole pending buffer on every line, copying up to 16 KB per line: 5 us and 9 KB of
 * garbage a line against 3 us and 1.8 KB here (docs/performance.md). What is pending is written out on exit. One per
 * process (the logging module's), shared by every application in it.
 */
export class TurnBatchedStdout implements DestinationStream {
  private corked = false;
  /** Set once stdout fails (its reader gone: EPIPE): logging stops there, as pino's own destination does. */
  private broken = false;

  constructor(private readonly out: NodeJS.WriteStream = process.stdout) {
    process.once('exit', this.uncork);
    out.on('error', () => {
      this.broken = true;
    });
  }

  write(line: string): void {
    if (this.broken) return;
    if (!this.corked) {
      this.corked = true;
      this.out.cork();
      setImmediate(this.uncork);
    }
    this.out.write(line);
  }

  /** pino's `logger.flush(cb)`: `cb` once every line so far has been handed to the system. */
  flush(cb: (error?: Error) => void): void {
    this.uncork();
    if (this.broken) return cb();
    this.out.write('', () => cb());
  }

  private readonly uncork = (): void => {
    if (!this.corked) return;
    this.corked = false;
    this.out.uncork();
  };
}
