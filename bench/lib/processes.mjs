// Starting, watching and stopping the processes the bench runs: the service, the baseline, the peers
// (bench/peer/*.mjs) and autocannon.
// Every child is registered so that the driver can stop it on any exit path (stopAll).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { sleep, waitForHttp } from './util.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The CPU the servers run on and the CPU of the load generators (BENCH_SERVER_CPU / BENCH_CLIENT_CPU). */
export const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
export const CLIENT_CPU = process.env.BENCH_CLIENT_CPU ?? '1';

let serviceMain = path.join(ROOT, 'dist', 'src', 'main.js');

/** The service's built sources, dist/src (in the snapshot once taken). */
export const serviceDist = () => path.dirname(serviceMain);

/** The built module of the service's HTTP adapter, for the adapted Nest hello app. */
export const serviceAdapterModule = () => path.join(serviceDist(), 'common', 'express-adapter.js');

/**
 * Copies dist/ into `dir` and runs the service from there, so that a rebuild of dist/ by someone else during the
 * bench cannot change, or break, the code being measured. Packages still resolve from the project's node_modules.
 */
export function snapshotDist(dir) {
  if (!existsSync(serviceMain)) throw new Error('dist/src/main.js is missing: run npm run build first');
  cpSync(path.join(ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  serviceMain = path.join(dir, 'dist', 'src', 'main.js');
}

const running = new Set();
let closing = false;

/** kB of peak resident memory (VmHWM) of a live process, or NaN. */
export function peakRssKb(pid) {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system, all threads) a live process has used so far, or NaN. */
export function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

/**
 * Seconds one CPU spent running processes (user, nice, system) since boot, from /proc/stat, or NaN. Interrupt
 * time is left out: the loopback traffic of the bench itself is handled there.
 */
export function cpuBusySeconds(cpu) {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${cpu} `));
    const [user, nice, system] = line.trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

/**
 * Waits (at most `maxWaitMs`) until the two bench CPUs are quiet — together less than `threshold` of a CPU busy
 * over one second — so that a measurement does not start in the middle of someone else's burst of work.
 * Returns how long it waited and the last busy share seen.
 */
export async function waitForQuietCpus(maxWaitMs = 30_000, threshold = 0.2) {
  const started = performance.now();
  let share = Number.NaN;
  for (;;) {
    const busy0 = cpuBusySeconds(SERVER_CPU) + cpuBusySeconds(CLIENT_CPU);
    await sleep(1000);
    share = cpuBusySeconds(SERVER_CPU) + cpuBusySeconds(CLIENT_CPU) - busy0;
    if (!(share >= threshold) || performance.now() - started >= maxWaitMs) break;
  }
  return { waitedMs: Math.round(performance.now() - started), busyShare: share };
}

/** CPU seconds of the PostgreSQL backends serving database `db` (found by their process title), or 0. */
export function postgresSeconds(db) {
  if (!db) return 0;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.startsWith('postgres: ') && title.includes(` ${db} `)) total += cpuSeconds(entry);
    } catch {}
  }
  return total;
}

/**
 * Measures the CPU the server process spends while `fn` runs, and what other processes spent on the two bench
 * CPUs meanwhile (everything but the server, the load generators and the PostgreSQL backends of database `db`):
 * `{ value, cpuSec, wallSec, cpuShare, clientShare, postgresShare, othersShare }` (shares of one CPU).
 */
export async function withCpu(pid, fn, db) {
  const server0 = cpuSeconds(pid);
  const client0 = clientSeconds();
  const pg0 = postgresSeconds(db);
  const busy0 = cpuBusySeconds(SERVER_CPU) + cpuBusySeconds(CLIENT_CPU);
  const wall0 = performance.now();
  const value = await fn();
  const cpuSec = cpuSeconds(pid) - server0;
  const clientSec = clientSeconds() - client0;
  const pgSec = postgresSeconds(db) - pg0;
  const busySec = cpuBusySeconds(SERVER_CPU) + cpuBusySeconds(CLIENT_CPU) - busy0;
  const wallSec = (performance.now() - wall0) / 1000;
  return {
    value,
    cpuSec,
    wallSec,
    cpuShare: cpuSec / wallSec,
    clientShare: clientSec / wallSec,
    postgresShare: pgSec / wallSec,
    othersShare: Math.max(0, (busySec - cpuSec - clientSec - pgSec) / wallSec),
  };
}

/**
 * CPU seconds of the load generators: this driver plus its exited, reaped children (autocannon runs to its end
 * inside a measurement, so its time lands in cutime/cstime).
 */
function clientSeconds() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

/**
 * Spawns `command` pinned to `cpu` with `taskset -c` (taskset execs the command, so the child's pid is the
 * command's pid). Stdout is drained continuously (the service logs every request there at level info); only the
 * first `keepHead` bytes and the count and last few lines of error-level log records are kept.
 */
function spawnPinned(name, cpu, command, args, env, { keepHead = 64 * 1024 } = {}) {
  if (closing) throw new Error('the bench is shutting down');
  const child = spawn('taskset', ['-c', cpu, command, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = {
    name,
    child,
    pid: child.pid,
    head: '',
    tail: '',
    stderr: '',
    errorLogLines: 0,
    lastErrorLogs: [],
    exited: false,
    exitCode: null,
    exitSignal: null,
    exitPromise: null,
  };
  let partial = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    if (proc.head.length < keepHead) proc.head += chunk.slice(0, keepHead - proc.head.length);
    proc.tail = (proc.tail + chunk).slice(-4096);
    // Cheap scan for pino error/fatal records ("level":50 / 60); everything else is discarded.
    if (chunk.includes('"level":50') || chunk.includes('"level":60') || partial) {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      if (partial.length > 16384) partial = '';
      for (const line of lines) {
        if (line.includes('"level":50') || line.includes('"level":60')) {
          proc.errorLogLines++;
          proc.lastErrorLogs.push(line.slice(0, 2000));
          if (proc.lastErrorLogs.length > 5) proc.lastErrorLogs.shift();
        }
      }
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    proc.stderr = (proc.stderr + chunk).slice(-8192);
  });
  proc.exitPromise = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      proc.exited = true;
      proc.exitCode = code;
      proc.exitSignal = signal;
      running.delete(proc);
      resolve();
    });
    child.on('error', (error) => {
      proc.stderr += `\nspawn error: ${error.message}`;
      proc.exited = true;
      running.delete(proc);
      resolve();
    });
  });
  running.add(proc);
  return proc;
}

/** SIGTERM, wait up to `graceMs`, then SIGKILL. Resolves when the process has exited. */
export async function stopProcess(proc, graceMs = 20_000) {
  if (proc.exited) return;
  proc.child.kill('SIGTERM');
  const timer = sleep(graceMs).then(() => 'timeout');
  if ((await Promise.race([proc.exitPromise, timer])) === 'timeout' && !proc.exited) {
    process.stderr.write(`bench: ${proc.name} (pid ${proc.pid}) ignored SIGTERM for ${graceMs} ms, sending SIGKILL\n`);
    proc.child.kill('SIGKILL');
    await proc.exitPromise;
  }
}

/** Stops every process the bench started; no new one can be started afterwards. */
export async function stopAll() {
  closing = true;
  await Promise.all([...running].map((proc) => stopProcess(proc, 10_000)));
}

let launchConfig;

/**
 * The node flags and environment of the project's default start command, from the root package.json of `root`:
 * `"config": { "nodeOptions": "<flags>", "mallocArenaMax": "<n>", "mallocMmapThreshold": "<bytes>" }` (each optional).
 * `{ nodeOptions: string[], mallocArenaMax?: string, mallocMmapThreshold?: string }`.
 */
function readLaunchConfig(root) {
  const config = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).config ?? {};
  // The start command's NODE_OPTIONS and its command-line V8 flags (`nodeFlags`), all as arguments here.
  const words = (flags) => (Array.isArray(flags) ? flags.map(String) : String(flags ?? '').split(' ')).filter(Boolean);
  const setting = (value) => (value === undefined || value === null || value === '' ? undefined : String(value));
  return {
    nodeOptions: [...words(config.nodeOptions), ...words(config.nodeFlags)],
    mallocArenaMax: setting(config.mallocArenaMax),
    mallocMmapThreshold: setting(config.mallocMmapThreshold),
  };
}

/** This checkout's launch settings ({@link readLaunchConfig}), read once per run so every service process starts alike. */
export function serviceLaunchConfig() {
  launchConfig ??= readLaunchConfig(ROOT);
  return launchConfig;
}

/**
 * Another checkout of the project, built (`npm ci && npm run build` there), to run side by side with this one
 * (BENCH_BASE): its dist/src/main.js, started with its own package.json's launch settings.
 */
export function otherBuild(dir) {
  const root = path.resolve(dir);
  const main = path.join(root, 'dist', 'src', 'main.js');
  if (!existsSync(main)) throw new Error(`${root}: dist/src/main.js is missing (run npm ci && npm run build there)`);
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {}
  return { root, main, commit, launch: readLaunchConfig(root) };
}

/** The extra node flags of BENCH_SERVICE_NODE_ARGS (for profiling, e.g. "--cpu-prof --cpu-prof-dir=prof"). */
export const extraServiceNodeArgs = () => (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);

/** The environment variables of a launch configuration ({@link readLaunchConfig}): glibc's malloc settings. */
export function launchEnv({ mallocArenaMax, mallocMmapThreshold }) {
  const env = {};
  if (mallocArenaMax !== undefined) env.MALLOC_ARENA_MAX = mallocArenaMax;
  if (mallocMmapThreshold !== undefined) env.MALLOC_MMAP_THRESHOLD_ = mallocMmapThreshold;
  return env;
}

function serviceEnv({ port, databaseUrl }, launch = serviceLaunchConfig()) {
  const issuer = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    ISSUER: issuer,
    RATE_LIMIT_LOGIN: '1000000',
    RATE_LIMIT_TOKEN: '1000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    NODE_ENV: 'development',
  };
  // As the project's start command runs it (package.json config.mallocArenaMax); BENCH_SERVICE_ENV may override.
  Object.assign(env, launchEnv(launch));
  // Extra variables for experiments, e.g. BENCH_SERVICE_ENV="MALLOC_ARENA_MAX=2 UV_THREADPOOL_SIZE=2".
  for (const pair of (process.env.BENCH_SERVICE_ENV ?? '').split(' ').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return { env, issuer };
}

/** The demo block's admin and client: `CLIENT_ID=… CLIENT_SECRET=…` now, `client_id:` lines in older builds (a BENCH_BASE). */
function parseDemo(text) {
  const login = /admin login:\s+(\S+) \/ (\S+)/.exec(text);
  const clientId = /CLIENT_ID=(\S+)/.exec(text) ?? /client_id:\s+(\S+)/.exec(text);
  const clientSecret = /CLIENT_SECRET=(\S+)/.exec(text) ?? /client_secret:\s+(\S+)/.exec(text);
  if (!login || !clientId || !clientSecret) return undefined;
  return { email: login[1], password: login[2], clientId: clientId[1], clientSecret: clientSecret[1] };
}

/**
 * The flows measure a trusted client (no consent page), as oidc-provider's peer is set up; the demo client is not
 * trusted (a newcomer sees the consent page once), so the bench registers its own through the CLI.
 */
function trustedClient(env, issuer, main) {
  const cli = path.join(path.dirname(main), 'cli.js');
  const args = ['client:create', '--name', 'Bench Client', '--redirect-uri', `${issuer}/demo/callback`, '--trusted'];
  const out = execFileSync(process.execPath, [cli, ...args], { env: { ...env, LOG_LEVEL: 'silent' }, encoding: 'utf8' });
  const client = JSON.parse(out);
  return { clientId: client.client_id, clientSecret: client.client_secret };
}

/** Creates a person in a running service's database with its CLI (`user:create`); returns their id. */
export function createServiceUser(service, { email, password, name = 'Bench Person' }) {
  const { env } = serviceEnv({ port: service.port, databaseUrl: service.databaseUrl }, service.launch);
  const cli = path.join(path.dirname(service.main), 'cli.js');
  const args = ['user:create', '--email', email, '--password', password, '--name', name, '--gender', 'other', '--age', '40'];
  return JSON.parse(execFileSync(process.execPath, [cli, ...args], { env: { ...env, LOG_LEVEL: 'silent' }, encoding: 'utf8' })).id;
}

/**
 * Starts `node <package.json config.nodeOptions> <BENCH_SERVICE_NODE_ARGS> dist/src/main.js` pinned to the server
 * CPU and waits until /health/ready answers. On a fresh database (`expectDemo`) it also waits for the demo
 * credentials the service prints once. `build` ({@link otherBuild}) runs another checkout's service instead of this one.
 */
export async function startService({ name, port, databaseUrl, expectDemo, build }) {
  const main = build?.main ?? serviceMain;
  const launch = build?.launch ?? serviceLaunchConfig();
  const { env, issuer } = serviceEnv({ port, databaseUrl }, launch);
  const nodeArgs = [...launch.nodeOptions, ...extraServiceNodeArgs()];
  const proc = spawnPinned(name, SERVER_CPU, process.execPath, [...nodeArgs, main], env);
  try {
    await waitForHttp(`${issuer}/health/ready`, 60_000, () => !proc.exited);
    let demo;
    if (expectDemo) {
      const deadline = Date.now() + 10_000;
      while (!(demo = parseDemo(proc.head)) && Date.now() < deadline && !proc.exited) await sleep(50);
      if (!demo) throw new Error('the service did not print the demo credentials');
      demo = { ...demo, ...trustedClient(env, issuer, main) };
    }
    return { proc, issuer, port, databaseUrl, demo, pid: proc.pid, main, launch };
  } catch (error) {
    await stopProcess(proc);
    throw new Error(`${name}: ${error.message}\n--- stderr ---\n${proc.stderr.slice(-2000)}\n--- stdout ---\n${proc.head.slice(-2000)}`);
  }
}

/** Starts bench/baseline-server.mjs pinned to the server CPU; it fetches the service's JWKS once at start. */
export async function startBaseline({ port, issuer, audience, jwksUrl, contractHeaders = false }) {
  const env = {
    CONTRACT_HEADERS: contractHeaders ? '1' : '0',
    PATH: process.env.PATH,
    PORT: String(port),
    HOST: '127.0.0.1',
    ISSUER: issuer,
    AUDIENCE: audience,
    JWKS_URL: jwksUrl,
  };
  const proc = spawnPinned('baseline', SERVER_CPU, process.execPath, ['bench/baseline-server.mjs'], env);
  const deadline = Date.now() + 20_000;
  while (!proc.head.includes('baseline listening') && Date.now() < deadline && !proc.exited) await sleep(50);
  if (!proc.head.includes('baseline listening')) {
    await stopProcess(proc);
    throw new Error(`baseline did not start:\n${proc.stderr.slice(-2000)}`);
  }
  return { proc, pid: proc.pid, url: `http://127.0.0.1:${port}` };
}

/**
 * Starts a peer server (bench/peer/*.mjs: `script`, relative to the repository) pinned to the server CPU, like the
 * service, with plain `node` (or `nodeArgs`) and only PATH, PORT and `env`, and waits for the JSON ready line it prints
 * (`{"ready":true,...}`) and, when given, for `healthPath` to answer 200. Returns `{ proc, pid, ready }`.
 */
export async function startPeer({ name, script, port, env = {}, healthPath, nodeArgs = [] }) {
  const proc = spawnPinned(name, SERVER_CPU, process.execPath, [...nodeArgs, script], {
    PATH: process.env.PATH,
    PORT: String(port),
    ...env,
  });
  try {
    const deadline = Date.now() + 30_000;
    let line;
    while (!(line = proc.head.split('\n').find((l) => l.startsWith('{"ready":true'))) && Date.now() < deadline && !proc.exited) {
      await sleep(50);
    }
    if (!line) throw new Error(proc.exited ? `exited (${proc.exitCode ?? proc.exitSignal})` : 'no ready line after 30 s');
    const ready = JSON.parse(line);
    if (ready.pid !== proc.pid) throw new Error(`ready line from pid ${ready.pid}, expected ${proc.pid}`);
    if (healthPath) await waitForHttp(new URL(healthPath, `http://127.0.0.1:${port}`).toString(), 20_000, () => !proc.exited);
    return { proc, pid: proc.pid, ready };
  } catch (error) {
    await stopProcess(proc);
    throw new Error(`${name} did not start: ${error.message}\n--- stderr ---\n${proc.stderr.slice(-2000)}`);
  }
}

/**
 * Runs autocannon in a child process pinned to the client CPU and returns its JSON result. Bounded by its own
 * duration plus a grace period after which it is killed.
 */
export async function autocannon({ url, connections, durationSec, headers = {}, timeoutSec = 10, dpop }) {
  let args;
  const env = { PATH: process.env.PATH };
  if (dpop) {
    // A request built per call (a proof each): bench/lib/dpop-cannon.mjs, with `dpop.scheme` bearer or dpop.
    args = [path.join(ROOT, 'bench', 'lib', 'dpop-cannon.mjs')];
    env.DPOP_CANNON = JSON.stringify({ url, connections, durationSec, timeoutSec, ...dpop });
  } else {
    args = [
      path.join(ROOT, 'node_modules', 'autocannon', 'autocannon.js'),
      '--json',
      '--no-progress',
      '-c',
      String(connections),
      '-d',
      String(durationSec),
      '-t',
      String(timeoutSec),
    ];
    for (const [key, value] of Object.entries(headers)) args.push('-H', `${key}=${value}`);
    args.push(url);
  }
  const proc = spawnPinned('autocannon', CLIENT_CPU, process.execPath, args, env, { keepHead: 4 * 1024 * 1024 });
  const limit = sleep((durationSec + timeoutSec + 30) * 1000).then(() => 'timeout');
  if ((await Promise.race([proc.exitPromise, limit])) === 'timeout') {
    await stopProcess(proc, 2000);
    throw new Error('autocannon did not finish in time');
  }
  if (proc.exitCode !== 0) throw new Error(`autocannon exited with ${proc.exitCode ?? proc.exitSignal}: ${proc.stderr.slice(-2000)}`);
  const line = proc.head
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (!line) throw new Error(`autocannon printed no JSON: ${proc.head.slice(0, 500)} ${proc.stderr.slice(-500)}`);
  const result = JSON.parse(line);
  return {
    requestsPerSec: result.requests.average,
    requestsTotal: result.requests.total,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationSec: result.duration,
    connections: result.connections,
  };
}
