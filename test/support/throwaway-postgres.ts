import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A PostgreSQL cluster of the test's own, in a temp folder, that the test may stop and start at will. */
export class ThrowawayPostgres {
  readonly dir: string;
  private readonly bin: string;

  constructor(readonly port: number) {
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

  start(): void {
    this.run([
      `${this.bin}/pg_ctl`,
      '-D',
      `${this.dir}/data`,
      '-l',
      `${this.dir}/log`,
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-w',
      'start',
    ]);
  }

  stop(): void {
    this.run([`${this.bin}/pg_ctl`, '-D', `${this.dir}/data`, '-m', 'fast', '-w', 'stop']);
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
