import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onServerPort } from './service-process';

/** A PostgreSQL cluster of the test's own, in a temp folder, that the test may stop and start at will. */
export class ThrowawayPostgres {
  readonly dir: string;
  private readonly bin: string;

  /**
   * A new cluster, initialised and started on a port of its own (another one when the first drawn was taken), with
   * server `settings` (`name=value`) besides the test defaults.
   */
  static launch(settings: string[] = []): Promise<ThrowawayPostgres> {
    return onServerPort(async (port) => {
      const pg = new ThrowawayPostgres(port, settings);
      pg.init();
      try {
        pg.start();
      } catch (error) {
        pg.destroy();
        throw error;
      }
      return pg;
    });
  }

  private constructor(
    readonly port: number,
    private readonly settings: string[],
  ) {
    const version = readdirSync('/usr/lib/postgresql').sort().pop();
    this.bin = `/usr/lib/postgresql/${version}/bin`;
    this.dir = mkdtempSync(join(tmpdir(), 'pg-outage-'));
    chmodSync(this.dir, 0o777);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private run(args: string[]): void {
    // initdb and postgres refuse to run as root; run them as the postgres user when we are root.
    const asRoot = process.getuid?.() === 0;
    const command = asRoot ? 'runuser' : args[0];
    const argv = asRoot ? ['-u', 'postgres', '--', ...args] : args.slice(1);
    execFileSync(command, argv, { stdio: 'ignore', timeout: 60_000 });
  }

  init(): void {
    this.run([`${this.bin}/initdb`, '-D', `${this.dir}/data`, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  }

  /** Starts the cluster; a failed start throws with the server's log (which names a taken port). */
  start(): void {
    try {
      this.startCluster();
    } catch (error) {
      const log = existsSync(`${this.dir}/log`) ? readFileSync(`${this.dir}/log`, 'utf8') : '';
      throw new Error(`PostgreSQL did not start on port ${this.port}: ${String(error)}\n${log}`);
    }
  }

  private startCluster(): void {
    this.run([
      `${this.bin}/pg_ctl`,
      '-D',
      `${this.dir}/data`,
      '-l',
      `${this.dir}/log`,
      '-o',
      [`-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`, ...this.settings.map((s) => `-c ${s}`)].join(' '),
      '-w',
      'start',
    ]);
  }

  stop(): void {
    this.run([`${this.bin}/pg_ctl`, '-D', `${this.dir}/data`, '-m', 'fast', '-w', 'stop']);
  }

  /** Stops the server as a crash would (`immediate`: no checkpoint, WAL not yet flushed is lost); start() recovers. */
  crash(): void {
    this.run([`${this.bin}/pg_ctl`, '-D', `${this.dir}/data`, '-m', 'immediate', '-w', 'stop']);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
