import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, accepts, onServerPort } from './service-process';

/** The HAProxy configuration docs/deployment.md shows: run as it is, its addresses given in the environment. */
export const HAPROXY_CONFIG = join(ROOT, 'deploy/haproxy.cfg');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Debian's HAProxy running {@link HAPROXY_CONFIG} in the foreground (`-db`) in front of the given instances
 * (`host:port` each, in the order of the file's `server` lines). Its output says when a server goes DOWN or UP.
 */
export class HaproxyBalancer {
  private out = '';

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (this.out += d.toString()));
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  output(): string {
    return this.out;
  }

  /** Starts it on a free port (another one when that port was taken meanwhile) and waits until it accepts connections. */
  static start(instances: string[]): Promise<HaproxyBalancer> {
    const addresses = Object.fromEntries(instances.map((address, i) => [`INSTANCE_${i + 1}`, address]));
    return onServerPort(async (port) => {
      const child = spawn('haproxy', ['-f', HAPROXY_CONFIG, '-db'], {
        env: { PATH: process.env.PATH ?? '', LISTEN: `127.0.0.1:${port}`, ...addresses },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const balancer = new HaproxyBalancer(child, port);
      const spawned = await new Promise<Error | undefined>((resolve) => {
        child.once('spawn', () => resolve(undefined));
        child.once('error', resolve);
      });
      if (spawned) throw new Error(`haproxy could not be run (apt-get install haproxy): ${spawned.message}`);
      while (child.exitCode === null && !(await accepts(port))) await sleep(50);
      // A port taken meanwhile: "cannot bind socket (Address already in use)", which onServerPort draws again for.
      if (child.exitCode !== null) throw new Error(`haproxy exited at start:\n${balancer.out}`);
      return balancer;
    });
  }

  /** How many times HAProxy has reported `server` (`instance1`, ...) as DOWN or UP so far, and the DOWN reasons. */
  changes(server: string, state: 'DOWN' | 'UP'): string[] {
    return this.out.split('\n').filter((line) => line.includes(`Server instances/${server} is ${state}`));
  }

  /** Waits (up to a minute, a limit for a hang) until HAProxy has reported `server` in `state` more than `seen` times. */
  async waitFor(server: string, state: 'DOWN' | 'UP', seen: number): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (this.changes(server, state).length <= seen) {
      if (this.child.exitCode !== null || Date.now() > deadline) throw new Error(`haproxy never saw ${server} ${state}:\n${this.out}`);
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    await exited;
  }
}
