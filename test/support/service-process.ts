import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { type AddressInfo, type Server, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');

/** The V8 flags `npm start` puts on the node command line (package.json `config.nodeFlags`). */
export const NODE_FLAGS: string[] = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { config: { nodeFlags: string } }
).config.nodeFlags
  .split(' ')
  .filter(Boolean);

/**
 * The tests' own build of the service, beside dist/ and not in it: `npm start` or `npm run build` in the same clone
 * (which empty dist/ first) cannot pull modules from under a running suite.
 */
const BUILD_DIR = '.test-build';
/** The built service and its command line, relative to {@link ROOT} (the child processes' working directory). */
export const MAIN = `${BUILD_DIR}/src/main.js`;
export const CLI = `${BUILD_DIR}/src/cli.js`;

const STAMP = join(ROOT, BUILD_DIR, '.build-stamp');
const LOCK = join(ROOT, BUILD_DIR, '.build-lock');
/** A lock older than this was left by a build that died: taken over. */
const STALE_LOCK_MS = 5 * 60_000;

/** The newest modification time among the files a build reads (src/, the build's tsconfig, package.json). */
function newestSource(): number {
  let newest = Math.max(statSync(join(ROOT, 'tsconfig.build.json')).mtimeMs, statSync(join(ROOT, 'package.json')).mtimeMs);
  for (const entry of readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function buildIsCurrent(): boolean {
  return existsSync(STAMP) && statSync(STAMP).mtimeMs >= newestSource();
}

/**
 * Makes sure {@link BUILD_DIR} holds a build of the current sources, for the test files that run the real service or its command
 * line as a child process. It builds only when a source changed since the last build made here, and one build at a
 * time across the suite's workers (a directory as lock): rebuilding while another test file's child process loads
 * the build would hand it half-written modules.
 */
export function buildOnce(): void {
  if (buildIsCurrent()) return;
  mkdirSync(join(ROOT, BUILD_DIR), { recursive: true });
  const deadline = Date.now() + 2 * STALE_LOCK_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      if (existsSync(LOCK) && Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS) rmSync(LOCK, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`another test worker has been building ${BUILD_DIR}/ for too long`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    if (buildIsCurrent()) return;
    const started = Date.now();
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', BUILD_DIR], { cwd: ROOT, stdio: 'inherit' });
    execFileSync(process.execPath, ['scripts/build.mjs', '--assets-only', BUILD_DIR], { cwd: ROOT, stdio: 'inherit' });
    // The stamp says which sources the build saw: those as of when it started.
    writeFileSync(STAMP, '');
    utimesSync(STAMP, started / 1000, started / 1000);
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/**
 * Listens on a port the kernel picks (port 0) and reads it back: no other suite can be handed that port meanwhile,
 * as it could between "find a free port" and "listen on it". A failure to listen rejects (never an unhandled error).
 */
export function listenOnFreePort(server: Server): Promise<number> {
  return new Promise((resolvePort, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolvePort((server.address() as AddressInfo).port);
    });
  });
}

/**
 * A free port for a server a test starts in another process (the service, a PostgreSQL cluster, Redis), which
 * listens only a second or more later: drawn outside the kernel's ephemeral range (32768-60999 here), where port 0
 * and every outgoing connection take theirs. Two suites may still draw the same one: start through
 * {@link onServerPort}, which draws again when the start says its port was taken.
 */
export async function serverPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolvePort) => {
      const server = createServer();
      server.once('error', () => resolvePort(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolvePort(true)));
    });
    if (free) return port;
  }
}

/** What a server's start says when its port was taken. */
const PORT_TAKEN = /EADDRINUSE|address already in use/i;

/**
 * Runs `start` on a port from {@link serverPort}; when it fails because that port was taken meanwhile (its error
 * says so), on another one. Any other failure, or a fifth taken port, fails at once.
 */
export async function onServerPort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await serverPort());
    } catch (error) {
      if (attempt >= 5 || !PORT_TAKEN.test(String(error))) throw error;
    }
  }
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

/**
 * Starts the built service ({@link MAIN}) and waits for its `ready` line; stdout and stderr are captured. On `port` when given
 * (the same issuer as an earlier run: its tokens stay valid), else on a free one; with node's arguments `args` when
 * given (another command line that starts it, such as the image's).
 */
export async function startService(env: Record<string, string>, port?: number, args = [...NODE_FLAGS, MAIN]): Promise<RunningService> {
  return port === undefined ? onServerPort((drawn) => startOn(env, drawn, args)) : startOn(env, port, args);
}

async function startOn(env: Record<string, string>, port: number, args: string[]): Promise<RunningService> {
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', PORT: String(port), ISSUER: baseUrl, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early:\n${out}`);
    if (Date.now() > deadline) throw new Error(`service did not start:\n${out}`);
    // The last line of a start: demo data (if any) shown, the port open.
    if (out.includes('ready: listening on')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, baseUrl, output: () => out, exit };
}

/** Runs the service to completion (for configuration errors) and returns its exit code and output. */
export function runToExit(env: Record<string, string>, args = [MAIN]): { status: number | null; output: string } {
  try {
    const stdout = execFileSync(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 90_000,
    });
    return { status: 0, output: stdout.toString() };
  } catch (error) {
    const e = error as { status: number | null; stdout?: Buffer; stderr?: Buffer };
    return { status: e.status, output: `${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}` };
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` now (a server started by a test is up). */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
