import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');

/** Builds dist/ once per test file that runs the real service as a child process. */
export function buildOnce(): void {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

export function tempSqliteUrl(): { url: string; remove(): void } {
  const file = join(tmpdir(), `oauth-svc-proc-${randomUUID()}.sqlite`);
  return {
    url: `sqlite:${file}`,
    remove: () => {
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    },
  };
}

export interface RunningService {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  exit: Promise<number | null>;
}

/** Starts `node dist/src/main.js` and waits until it listens; stdout and stderr are captured. */
export async function startService(env: Record<string, string>): Promise<RunningService> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', PORT: String(port), ISSUER: baseUrl, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early:\n${out}`);
    if (Date.now() > deadline) throw new Error(`service did not start:\n${out}`);
    const up = await fetch(`${baseUrl}/health/live`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, baseUrl, output: () => out, exit };
}

/** Runs the service to completion (for configuration errors) and returns its exit code and output. */
export function runToExit(env: Record<string, string>, args = ['dist/src/main.js']): { status: number | null; output: string } {
  try {
    const stdout = execFileSync(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    return { status: 0, output: stdout.toString() };
  } catch (error) {
    const e = error as { status: number | null; stdout?: Buffer; stderr?: Buffer };
    return { status: e.status, output: `${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}` };
  }
}
