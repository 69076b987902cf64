// Benchmark of the service against the targets of the performance issue, with ratios to reference servers
// measured in the same run, on a machine with 2+ cores:
//   1. GET /api/resource (50 connections): the service, bench/baseline-server.mjs (bare node:http + jose) and
//      bench/peer/nest-hello-server.mjs (bare Nest 12 + Express, one controller), the latter twice: with Nest's stock
//      ExpressAdapter (the reference of the target) and, for information, with the service's ExpressHttpAdapter
//      (the same framework with the service's HTTP server set-up), and for information the baseline again answering
//      with the headers the contract asks of the service (helmet's defaults, a request id): req/s and p99 of each,
//      the ratios service / Nest hello (target >= 0.85) and service / baseline, p99 < 20 ms for the service. The five take
//      turns in BENCH_SLICES rounds (as the flows' sides do), and each ratio is the median of the rounds' ratios;
//   2. GET /users?gender=female&sort=age&order=desc&limit=20 (10 connections) on PostgreSQL with 1k and with 100k
//      users (a fresh database and service process for each), and the time of the one INSERT ... SELECT
//      generate_series that seeds the 100k users ("100k-user bulk insert");
//   3. the OAuth code flow with PKCE (10 loops) on SQLite and on PostgreSQL, the service against oidc-provider 9
//      (bench/peer/oidc-provider-server.mjs, in-memory; a fresh peer process for each database's block, alive next to
//      that block's service process): (a) logged-in session: authorize + token (target service / peer >= 1.3 in
//      flows/s), (b) + refresh (>= 1.2), (c) fresh browser with login (information only: the peer's login checks a
//      SHA-256 digest, the service's is argon2id), and the service's login alone. Who is measured first alternates
//      per flow (SQLite: service, peer, service; PostgreSQL: peer, service, peer); each side gets its own warm-up;
//   4. the peak RSS (VmHWM) of every service process (limit 200 MB), and of the peers and the baseline for
//      information;
//   5. sign-ins per second on SQLite, fresh browsers, 4 loops: the password form (argon2id) and a passkey alone
//      (options, assertion, session; the software authenticator of the e2e suite signs), target passkey / password
//      >= 5.
// The servers (service, peers, baseline) run pinned to CPU 0, the load generators (autocannon children, this
// driver) to CPU 1. The service runs with the node flags and MALLOC_ARENA_MAX of the project's start command, from
// the root package.json ("config": { "nodeOptions": "<flags>", "mallocArenaMax": "<n>" }, each optional; none when
// absent); the peers and the baseline run with plain node.
//
// Run:   npm run bench                      (builds, then runs everything: about 12 minutes with the defaults,
//                                            1-2 of them seeding 100k users, most of the rest the flows; more
//                                            while the CPUs are busy, up to BENCH_QUIET_WAIT per measurement)
//        BENCH_DURATION=3 npm run bench     (shorter measurements while developing)
//        node bench/run.mjs                 (without the build step; needs an up-to-date dist/)
// Env:   BENCH_DURATION  seconds per measurement (default 10)
//        BENCH_WARMUP    seconds of warm-up before each measurement (default 10, as docs/performance.md asks: both
//                        sides speed up over their first 20 s of load; 0 for none)
//        BENCH_SLICES    the code flows and GET /api/resource: each side's BENCH_DURATION is cut into this many slices, run alternately
//                        (service, peer, peer, service, ...), and the verdict is the median of the slices' ratios,
//                        so that the machine's drift over a minute weighs on both sides alike (default 4)
//        BENCH_ONLY      comma list of resource,users,flows,sign-in,dpop (default: all); flows-sqlite / flows-postgres
//                        for one database's flows only
//        BENCH_FLOWS     comma list of the code flows to run, a,b,c (default: all), e.g. for a profile of one flow
//        BENCH_BASE      another checkout of the project, built (e.g. `git worktree add ../base main` and `npm ci &&
//                        npm run build` there): flows (a) and (b) also run on its service and on a fresh one of
//                        this build, in alternating slices, target this build / that build >= 0.9 (none when unset)
//        BENCH_SERVER_CPU / BENCH_CLIENT_CPU  CPUs for the servers / load generators (default 0 / 1)
//        BENCH_PG_ADMIN_URL  PostgreSQL to create bench_<random> databases in
//                            (default postgres://postgres@127.0.0.1:5432/postgres; needs CREATE DATABASE)
//        BENCH_LOG_LEVEL  the service's LOG_LEVEL (default info; its stdout is piped to this driver and dropped)
//        BENCH_QUIET_WAIT  seconds to wait at most, before each measurement, for the CPUs to be quiet (default 30)
//        BENCH_SERVICE_ENV  extra variables for the service, e.g. "UV_THREADPOOL_SIZE=2" (override package.json's)
//        BENCH_SERVICE_NODE_ARGS  extra node flags for the service, after package.json's, e.g. "--cpu-prof
//                                 --cpu-prof-dir=prof"
// Needs: Linux (taskset, /proc), PostgreSQL reachable from 127.0.0.1, a built dist/, and for the flows the bench's
// own dependencies (oidc-provider): installed here with `npm ci --prefix bench` when bench/node_modules is missing or
// older than bench/package-lock.json (that needs the npm registry).
// Output: the environment (with the service's node flags), one table of every measurement (targets with PASS/FAIL;
// "*" marks a measurement during which other processes used the bench CPUs), a table of the ratios to the
// reference servers with their verdicts, the 100k-user bulk insert time, warnings, and the full figures in
// bench/results/<timestamp>.json.
// Cleans up after itself, also on Ctrl-C: stops every process it started (SIGTERM, then waits), drops its
// databases and deletes its SQLite files. Exit code 0 when every scenario ran (whatever the verdicts), else 1.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { freshBrowserFlow, loopStates, mergeFlowRuns, runFlowLoops, sessionFlow, sessionRefreshFlow } from './lib/flows.mjs';
import { DpopKey } from './lib/dpop.mjs';
import { CookieJar, OAuthClient } from './lib/oauth.mjs';
import { passkeySignIn, registerPasskey } from './lib/passkey-client.mjs';
import { PeerOAuthClient } from './lib/peer-client.mjs';
import { createDatabase, databaseUrl, dropAllDatabases, dropDatabase, seedUsersTo } from './lib/pg.mjs';
import {
  CLIENT_CPU,
  ROOT,
  SERVER_CPU,
  autocannon,
  extraServiceNodeArgs,
  otherBuild,
  peakRssKb,
  serviceAdapterModule,
  serviceLaunchConfig,
  snapshotDist,
  waitForQuietCpus,
  withCpu,
  startBaseline,
  startPeer,
  startService,
  createServiceUser,
  stopAll,
  stopProcess,
} from './lib/processes.mjs';
import { fmtMb, fmtMs, fmtNum, freePort, summarize } from './lib/util.mjs';

const DURATION = positive('BENCH_DURATION', 10);
const SLICES = Math.max(1, Math.round(positive('BENCH_SLICES', 4)));
const WARMUP = positive('BENCH_WARMUP', 10, true);
const ONLY_VALUES = ['resource', 'users', 'flows', 'flows-sqlite', 'flows-postgres', 'sign-in', 'dpop'];
const ONLY = new Set(
  (process.env.BENCH_ONLY || 'resource,users,flows,sign-in,dpop')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
for (const value of ONLY) {
  if (!ONLY_VALUES.includes(value)) {
    process.stderr.write(`BENCH_ONLY: unknown scenario "${value}" (known: ${ONLY_VALUES.join(', ')})\n`);
    process.exit(2);
  }
}
/** Whether a scenario (resource, users, flows-sqlite, flows-postgres) is to run. */
const enabled = (key) => ONLY.has(key) || (key.startsWith('flows-') && ONLY.has('flows'));
const RESOURCE_CONNECTIONS = 50;
const USERS_CONNECTIONS = 10;
const FLOW_LOOPS = 10;
const LOGIN_ALONE_COUNT = 20;
const USERS_PATH = '/users?gender=female&sort=age&order=desc&limit=20';
const RSS_LIMIT_KB = 200 * 1024;
const DISTURBED_SHARE = 0.15;
const CLIENT_SATURATED_SHARE = 0.9;
const SCENARIO_ATTEMPTS = 2;
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT ?? 30) * 1000;
/** Targets of the performance issue: flows/s of the service / flows/s of oidc-provider; (c) is information only. */
const FLOW_TARGETS = { a: 1.3, b: 1.2 };
/** Flows/s of this build / flows/s of the build in BENCH_BASE, side by side, for the flows with a target above. */
const BASE_RATIO_TARGET = 0.9;
/** Another built checkout to measure the code flows against, side by side (BENCH_BASE), or undefined. */
const BASE = process.env.BENCH_BASE ? otherBuild(process.env.BENCH_BASE) : undefined;
const HELLO_RATIO_TARGET = 0.85;
const BASELINE_RATIO_TARGET = 1.0;
const P99_TARGET_MS = 20;
const BENCH_DIR = path.join(ROOT, 'bench');
const PEER_SCRIPT = 'bench/peer/oidc-provider-server.mjs';
const HELLO_SCRIPT = 'bench/peer/nest-hello-server.mjs';
const PEER_NAME = 'oidc-provider';

function positive(name, fallback, zeroOk = false) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!zeroOk && value === 0) || value > 600) {
    process.stderr.write(`${name} must be a number of seconds (0 < n <= 600), got "${raw}"\n`);
    process.exit(2);
  }
  return value;
}

const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'oauth-bench-'));
const results = {
  startedAt: new Date().toISOString(),
  environment: {},
  settings: {},
  scenarios: {},
  rows: [],
  comparisons: [],
  notes: [],
  scenarioErrors: [],
};
const rows = results.rows;
const comparisons = results.comparisons;
let cleanedUp = false;

async function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  await stopAll();
  await dropAllDatabases();
  rmSync(tmpDir, { recursive: true, force: true });
}

// Bounded in time whatever happens: a hung request or process cannot keep the bench alive. 17 measurements (3
// resource, 2 users, 2 x 6 flows), each with a warm-up and a wait for quiet CPUs, plus starts, seeding and logins.
const MEASUREMENTS = 21;
const WATCHDOG_SEC = 900 + MEASUREMENTS * (2 * (DURATION + WARMUP) + QUIET_WAIT_MS / 1000);
const watchdog = setTimeout(async () => {
  process.stderr.write(`bench: still running after ${WATCHDOG_SEC} s, giving up\n`);
  await cleanup();
  process.exit(1);
}, WATCHDOG_SEC * 1000);

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    process.stderr.write(`bench: ${signal}, cleaning up\n`);
    await cleanup();
    process.exit(130);
  });
}

const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function row(r) {
  rows.push({
    section: '',
    name: '',
    rate: '',
    p50: NaN,
    p99: NaN,
    errors: '',
    cpu: '',
    cpuOp: '',
    target: '',
    measured: '',
    result: '',
    ...r,
  });
}

/** PASS/FAIL of a figure against a target; a measurement with errors is a FAIL whatever the figure. */
function verdict(ok, errors = 0) {
  if (errors > 0) return 'FAIL (errors)';
  return ok ? 'PASS' : 'FAIL';
}

const cannonErrors = (r) => r.non2xx + r.errors + r.timeouts;

/**
 * ms per RS256 signature (RSA 2048, SHA-256) on this host, in this process: both sides of the flows make one per
 * token, so the slower it is, the nearer to 1 every flow ratio is pulled; recorded to tell hosts apart.
 */
function rs256SignMs() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.alloc(300, 'x');
  for (let i = 0; i < 20; i++) sign('sha256', data, privateKey);
  const count = 200;
  const started = performance.now();
  for (let i = 0; i < count; i++) sign('sha256', data, privateKey);
  return +((performance.now() - started) / count).toFixed(3);
}

function env() {
  const cpus = os.cpus();
  let git = 'unknown';
  try {
    git = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim();
    if (dirty) git += ' (with uncommitted changes)';
  } catch {}
  let postgres = 'unknown';
  try {
    // With autovacuum off, the flows' dead rows (redeemed codes, rotated tokens) pile up through a run.
    const show = (setting) =>
      execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-tAc', `SHOW ${setting}`], { encoding: 'utf8', timeout: 10_000 }).trim();
    postgres = `${show('server_version')}, autovacuum ${show('autovacuum')}`;
  } catch {}
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    rs256SignMs: rs256SignMs(),
    memoryGb: +(os.totalmem() / 2 ** 30).toFixed(1),
    loadAverage: os.loadavg().map((n) => +n.toFixed(2)),
    postgres,
    commit: git,
  };
}

/** Pins this driver (the flow-loop load generator) to the client CPU; children pick their own with taskset. */
function pinSelf() {
  try {
    execFileSync('taskset', ['-a', '-cp', CLIENT_CPU, String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function getJson(url, token) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Notes a measurement during which other processes (another developer's tests, say) used the bench CPUs: its
 * figures are then pessimistic. Returns whether it was disturbed.
 */
function checkCpuShare(label, { othersShare }) {
  if (othersShare <= DISTURBED_SHARE) return false;
  results.notes.push(
    `${label}: other processes used ${(othersShare * 100).toFixed(0)}% of a CPU on CPUs ${SERVER_CPU},${CLIENT_CPU} during the measurement (figures pessimistic)`,
  );
  return true;
}

/**
 * Notes a measurement during which the load generator (CPU 1) was nearly saturated: the server may then not have
 * been, and its figure (and a ratio to it) is a lower bound.
 */
function checkClientShare(label, { clientShare }) {
  if (!(clientShare >= CLIENT_SATURATED_SHARE)) return;
  results.notes.push(
    `${label}: the load generator used ${(clientShare * 100).toFixed(0)}% of CPU ${CLIENT_CPU}: the server may not have been saturated (its figure is a lower bound)`,
  );
}

/** Waits (bounded) for the bench CPUs to be quiet before a measurement; says so when they did not get quiet. */
async function quietCpus(label) {
  const quiet = await waitForQuietCpus(QUIET_WAIT_MS);
  if (quiet.busyShare >= 0.2) {
    log(
      `${label}: the bench CPUs are still busy (${(quiet.busyShare * 100).toFixed(0)}% of a CPU) after ${quiet.waitedMs} ms; measuring anyway`,
    );
  }
  return quiet;
}

/** Warm-up, then the measured autocannon run, with the server's CPU use during the measured run. */
async function measureCannon(label, opts, server, db, { durationSec = DURATION, warmup = true } = {}) {
  const quiet = await quietCpus(label);
  if (warmup && WARMUP > 0) await autocannon({ ...opts, durationSec: WARMUP });
  log(`${label}: ${opts.connections} connections, ${durationSec} s`);
  const load0 = os.loadavg()[0];
  const measured = await withCpu(server.pid, () => autocannon({ ...opts, durationSec }), db);
  if (server.proc.exited) throw withProcessState(new Error(`${label}: the server exited during the measurement`), server.proc);
  const disturbed = checkCpuShare(label, measured);
  checkClientShare(label, measured);
  const r = measured.value;
  return {
    ...r,
    serverCpuShare: measured.cpuShare,
    serverCpuMsPerRequest: (measured.cpuSec * 1000) / r.requestsTotal,
    clientCpuShare: measured.clientShare,
    postgresCpuShare: measured.postgresShare,
    othersCpuShare: measured.othersShare,
    disturbed,
    loadAverageBefore: load0,
    waitedForQuietMs: quiet.waitedMs,
  };
}

/** The CPU columns of a row: share of the server CPU and server CPU time per operation. */
const cpuCells = (share, msPerOp) => ({ cpu: `${(share * 100).toFixed(0)}%`, cpuOp: fmtMs(msPerOp) });

/** A table row of one autocannon measurement (rate, latencies, errors, server CPU), plus target cells if any. */
function measuredRow(section, name, r, extra = {}) {
  row({
    section,
    name,
    rate: `${fmtNum(r.requestsPerSec)} req/s`,
    p50: r.p50,
    p99: r.p99,
    errors: cannonErrors(r),
    ...cpuCells(r.serverCpuShare, r.serverCpuMsPerRequest),
    disturbed: r.disturbed,
    ...extra,
  });
}

function serviceHealth(service) {
  return { errorLogLines: service.proc.errorLogLines, lastErrorLogs: service.proc.lastErrorLogs };
}

async function stopService(service) {
  const peak = peakRssKb(service.pid);
  await stopProcess(service.proc);
  const clean = service.proc.exitCode === 0;
  if (!clean) results.notes.push(`${service.proc.name}: exit ${service.proc.exitCode ?? service.proc.exitSignal} after SIGTERM`);
  return { peakRssKb: peak, exitCode: service.proc.exitCode, ...serviceHealth(service) };
}

/** Adds what a dead service said to an error met while talking to it. */
function withProcessState(error, proc) {
  if (!proc.exited || error.processState) return error;
  const wrapped = new Error(
    `${error.message}; ${proc.name} (pid ${proc.pid}) had exited (${proc.exitCode ?? proc.exitSignal}); stderr: ${proc.stderr.slice(-1500)}; last stdout: ${proc.tail.slice(-1000)}`,
  );
  wrapped.cause = error.cause ?? error;
  wrapped.processState = true;
  return wrapped;
}

/** A new SQLite file name in the temp directory (fresh per attempt, so the demo data is always created). */
const tmpSqlite = (name) => path.join(tmpDir, `${name}-${randomBytes(4).toString('hex')}.sqlite`);

function removeSqlite(file) {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true });
}

function rssRow(section, name, kb) {
  row({ section, name: `peak RSS ${name}`, target: '<= 200 MB', measured: fmtMb(kb), result: verdict(kb <= RSS_LIMIT_KB) });
}

/** Stops a peer (or the baseline) and returns its peak RSS and exit code; a non-zero exit is noted. */
async function stopPeer(peer) {
  const peak = peakRssKb(peer.pid);
  await stopProcess(peer.proc);
  if (peer.proc.exitCode !== 0) results.notes.push(`${peer.proc.name}: exit ${peer.proc.exitCode ?? peer.proc.exitSignal} after SIGTERM`);
  return { peakRssKb: peak, exitCode: peer.proc.exitCode };
}

/** `throw withProcessStates(error, a, b)`: adds what the first of the processes that died said. */
function withProcessStates(error, ...servers) {
  return servers.filter(Boolean).reduce((e, server) => withProcessState(e, server.proc), error);
}

const fmtRatio = (ratio) => (Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : '-');

/**
 * Installs the bench's own dependencies (oidc-provider, for the flows' peer) with `npm ci --prefix bench` when
 * bench/node_modules is missing or older than bench/package-lock.json (npm writes node_modules/.package-lock.json
 * last, and `npm ci` never rewrites package-lock.json). npm's output goes to stderr, away from the table.
 */
function ensureBenchDependencies() {
  const lock = path.join(BENCH_DIR, 'package-lock.json');
  const hidden = path.join(BENCH_DIR, 'node_modules', '.package-lock.json');
  const marker = path.join(BENCH_DIR, 'node_modules', 'oidc-provider', 'package.json');
  const mtime = (file) => statSync(file).mtimeMs;
  let reason;
  if (!existsSync(marker) || !existsSync(hidden)) reason = 'missing';
  else if (mtime(hidden) < mtime(lock)) reason = 'older than bench/package-lock.json';
  if (!reason) return 'up to date';
  log(`bench/node_modules is ${reason}: npm ci --prefix bench --no-audit --no-fund`);
  try {
    execFileSync('npm', ['ci', '--prefix', BENCH_DIR, '--no-audit', '--no-fund'], {
      cwd: BENCH_DIR,
      stdio: ['ignore', 2, 2],
      timeout: 300_000,
    });
    return `installed (was ${reason})`;
  } catch (error) {
    if (!existsSync(marker)) throw new Error(`npm ci --prefix bench failed, and oidc-provider is not installed: ${error.message}`);
    results.notes.push(`npm ci --prefix bench failed (${error.message.split('\n')[0]}); the flows ran with the bench/node_modules found`);
    return `npm ci failed; used the bench/node_modules found (${reason})`;
  }
}

/** Version of an installed package, or "not installed". */
function packageVersion(dir) {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  } catch {
    return 'not installed';
  }
}

// 1. GET /api/resource: the service against the bare node:http + jose baseline and a bare Nest hello app.
async function resourceScenario() {
  const file = tmpSqlite('resource');
  const service = await startService({
    name: 'service (resource, sqlite)',
    port: await freePort(),
    databaseUrl: `sqlite:${file}`,
    expectDemo: true,
  });
  let baseline;
  let headed;
  let hello;
  let helloAdapted;
  try {
    const client = new OAuthClient({ issuer: service.issuer, ...service.demo });
    const tokens = await client.tokens(await client.loggedInJar(service.demo.email, service.demo.password));
    const token = tokens.access_token;
    const serviceBody = await getJson(`${service.issuer}/api/resource`, token);

    const startBaselineOf = async (contractHeaders) =>
      startBaseline({
        port: await freePort(),
        issuer: service.issuer,
        audience: service.issuer,
        jwksUrl: `${service.issuer}/.well-known/jwks.json`,
        contractHeaders,
      });
    baseline = await startBaselineOf(false);
    const baselineBody = await getJson(`${baseline.url}/api/resource`, token);
    if (JSON.stringify(serviceBody) !== JSON.stringify(baselineBody)) {
      throw new Error(`the baseline answers differently: ${JSON.stringify(serviceBody)} vs ${JSON.stringify(baselineBody)}`);
    }
    // Information: the same baseline answering with the headers the contract asks of the service (helmet's
    // defaults, a request id), which both the server and the load generator pay for.
    headed = await startBaselineOf(true);
    const headedBody = await getJson(`${headed.url}/api/resource`, token);
    if (JSON.stringify(headedBody) !== JSON.stringify(baselineBody)) {
      throw new Error(`the baseline with the contract's headers answers differently: ${JSON.stringify(headedBody)}`);
    }
    hello = await startPeer({ name: 'Nest hello app', script: HELLO_SCRIPT, port: await freePort() });
    // The same request as for the others (the hello app ignores the bearer token).
    const helloBody = await getJson(hello.ready.url, token);
    if (helloBody.message !== 'hello') throw new Error(`the Nest hello app answers ${JSON.stringify(helloBody)}`);
    helloAdapted = await startPeer({
      name: 'Nest hello app with the service adapter',
      script: HELLO_SCRIPT,
      port: await freePort(),
      env: { HELLO_ADAPTER: serviceAdapterModule() },
    });
    const adaptedBody = await getJson(helloAdapted.ready.url, token);
    if (adaptedBody.message !== 'hello') throw new Error(`the adapted Nest hello app answers ${JSON.stringify(adaptedBody)}`);

    const headers = { authorization: `Bearer ${token}` };
    // The four servers take turns in SLICES rounds (each after its own warm-up in the first), the order reversed
    // every other round, so that the machine's drift over the minutes weighs on all alike; the verdicts are the
    // medians of each round's ratios.
    const sides = [
      { key: 'service', label: 'service', url: `${service.issuer}/api/resource`, server: service },
      { key: 'baseline', label: 'baseline', url: `${baseline.url}/api/resource`, server: baseline },
      { key: 'headed', label: "baseline, the contract's headers", url: `${headed.url}/api/resource`, server: headed },
      { key: 'hello', label: 'Nest hello', url: hello.ready.url, server: hello },
      { key: 'adapted', label: 'Nest hello, service adapter', url: helloAdapted.ready.url, server: helloAdapted },
    ];
    const slices = Object.fromEntries(sides.map((side) => [side.key, []]));
    for (let i = 0; i < SLICES; i++) {
      for (const side of i % 2 ? [...sides].reverse() : sides) {
        const label = `GET /api/resource (${side.label})${SLICES > 1 ? `, slice ${i + 1}/${SLICES}` : ''}`;
        const opts = { url: side.url, connections: RESOURCE_CONNECTIONS, headers };
        slices[side.key].push(
          await measureCannon(label, opts, side.server, undefined, { durationSec: DURATION / SLICES, warmup: i === 0 }),
        );
      }
    }
    const [svc, base, head, hel, adapted] = sides.map((side) => mergeCannonSlices(slices[side.key]));
    const sliceRatio = (other) => median(slices.service.map((r, i) => r.requestsPerSec / slices[other][i].requestsPerSec));
    const svcProc = await stopService(service);
    const baseProc = await stopPeer(baseline);
    const headedProc = await stopPeer(headed);
    const helloProc = await stopPeer(hello);
    const adaptedProc = await stopPeer(helloAdapted);

    const ratio = sliceRatio('baseline');
    const helloRatio = sliceRatio('hello');
    results.scenarios.resource = {
      service: svc,
      baseline: base,
      baselineContractHeaders: head,
      nestHello: hel,
      nestHelloServiceAdapter: adapted,
      ratio,
      helloRatio,
      adaptedHelloRatio: sliceRatio('adapted'),
      serviceProcess: svcProc,
      baselinePeakRssKb: baseProc.peakRssKb,
      baselineContractHeadersPeakRssKb: headedProc.peakRssKb,
      nestHelloProcess: helloProc,
      nestHelloServiceAdapterProcess: adaptedProc,
      order: ['service', 'baseline', "baseline with the contract's headers", 'nest hello', 'nest hello with the service adapter'],
      slices,
    };
    const s = '1';
    measuredRow(s, `GET /api/resource service (${RESOURCE_CONNECTIONS} conn)`, svc, {
      target: `p99 < ${P99_TARGET_MS} ms`,
      measured: fmtMs(svc.p99),
      result: verdict(svc.p99 < P99_TARGET_MS, cannonErrors(svc)),
    });
    measuredRow(s, 'GET /api/resource baseline node:http+jose', base);
    measuredRow(s, "GET /api/resource baseline + the contract's headers", head);
    measuredRow(s, 'GET /api/resource Nest hello app (bare Nest)', hel);
    measuredRow(s, 'GET /api/resource Nest hello, service adapter', adapted);
    const helloVerdict = verdict(helloRatio >= HELLO_RATIO_TARGET, cannonErrors(svc) + cannonErrors(hel));
    const baseVerdict = verdict(ratio >= BASELINE_RATIO_TARGET, cannonErrors(svc) + cannonErrors(base));
    row({
      section: s,
      name: 'req/s service / Nest hello',
      target: `>= ${HELLO_RATIO_TARGET}`,
      measured: fmtRatio(helloRatio),
      disturbed: svc.disturbed || hel.disturbed,
      result: helloVerdict,
    });
    row({
      section: s,
      name: 'req/s service / baseline',
      target: `>= ${BASELINE_RATIO_TARGET.toFixed(1)}`,
      measured: fmtRatio(ratio),
      disturbed: svc.disturbed || base.disturbed,
      result: baseVerdict,
    });
    const side = (r) => ({ rate: r.requestsPerSec, unit: 'req/s', p50: r.p50, p99: r.p99, errors: cannonErrors(r) });
    comparisons.push(
      {
        group: 'resource',
        name: `GET /api/resource (${RESOURCE_CONNECTIONS} conn) / Nest hello`,
        db: 'sqlite',
        service: side(svc),
        other: side(hel),
        ratio: helloRatio,
        target: `>= ${HELLO_RATIO_TARGET}`,
        result: helloVerdict,
        first: 'service',
        disturbed: svc.disturbed || hel.disturbed,
      },
      {
        group: 'resource',
        name: `GET /api/resource (${RESOURCE_CONNECTIONS} conn) / Nest hello + service adapter`,
        db: 'sqlite',
        service: side(svc),
        other: side(adapted),
        ratio: sliceRatio('adapted'),
        target: 'info',
        result: 'info',
        first: 'service',
        disturbed: svc.disturbed || adapted.disturbed,
      },
      {
        group: 'resource',
        name: `GET /api/resource (${RESOURCE_CONNECTIONS} conn) / node:http+jose with the contract's headers`,
        db: 'sqlite',
        service: side(svc),
        other: side(head),
        ratio: sliceRatio('headed'),
        target: 'info',
        result: 'info',
        first: 'service',
        disturbed: svc.disturbed || head.disturbed,
      },
      {
        group: 'resource',
        name: `GET /api/resource (${RESOURCE_CONNECTIONS} conn) / node:http+jose`,
        db: 'sqlite',
        service: side(svc),
        other: side(base),
        ratio,
        target: `>= ${BASELINE_RATIO_TARGET.toFixed(1)}`,
        result: baseVerdict,
        first: 'service',
        disturbed: svc.disturbed || base.disturbed,
      },
    );
    return [
      ['resource service (sqlite)', svcProc.peakRssKb],
      ['baseline node:http+jose (info)', baseProc.peakRssKb, true],
      ["baseline with the contract's headers (info)", headedProc.peakRssKb, true],
      ['Nest hello app (info)', helloProc.peakRssKb, true],
      ['Nest hello app with the service adapter (info)', adaptedProc.peakRssKb, true],
    ];
  } catch (error) {
    throw withProcessStates(error, service, baseline, headed, hello, helloAdapted);
  } finally {
    await stopProcess(service.proc);
    if (baseline) await stopProcess(baseline.proc);
    if (headed) await stopProcess(headed.proc);
    if (hello) await stopProcess(hello.proc);
    if (helloAdapted) await stopProcess(helloAdapted.proc);
    removeSqlite(file);
  }
}

// 2. GET /users on PostgreSQL with 1,000 and with 100,000 users: a fresh database and service process for each size,
// so that each has its own peak RSS and the 100k users go in with one INSERT ... SELECT into a table holding only
// the demo admin.
async function usersScenario() {
  const out = {};
  const rss = [];
  for (const size of [1_000, 100_000]) {
    const db = await createDatabase();
    try {
      const service = await startService({
        name: `service (users ${size}, postgres)`,
        port: await freePort(),
        databaseUrl: databaseUrl(db),
        expectDemo: true,
      });
      try {
        const client = new OAuthClient({ issuer: service.issuer, ...service.demo, scope: 'users:read' });
        const token = (await client.tokens(await client.loggedInJar(service.demo.email, service.demo.password))).access_token;
        log(`seeding users to ${size}`);
        const seedStart = performance.now();
        const seeded = await seedUsersTo(db, size);
        const seedSec = (performance.now() - seedStart) / 1000;
        if (seeded.users !== size || seeded.counted !== size) throw new Error(`seeding: ${JSON.stringify(seeded)}`);
        log(`seeded: INSERT of ${seeded.inserted} rows ${seeded.insertSec.toFixed(2)} s, ANALYZE ${seeded.analyzeSec.toFixed(2)} s`);
        const page = await getJson(`${service.issuer}${USERS_PATH}`, token);
        const ages = page.data.map((u) => u.age);
        const sorted = ages.every((a, i) => i === 0 || ages[i - 1] >= a);
        if (page.data.length !== 20 || !sorted || page.data.some((u) => u.gender !== 'female') || page.page.total < size / 3 - 1) {
          throw new Error(`unexpected page: ${JSON.stringify(page).slice(0, 500)}`);
        }
        const r = await measureCannon(
          `GET /users (${size} users)`,
          { url: `${service.issuer}${USERS_PATH}`, connections: USERS_CONNECTIONS, headers: { authorization: `Bearer ${token}` } },
          service,
          db,
        );
        const proc = await stopService(service);
        out[size] = {
          ...r,
          total: page.page.total,
          seedSec,
          seedInserted: seeded.inserted,
          seedInsertSec: seeded.insertSec,
          seedAnalyzeSec: seeded.analyzeSec,
          serviceProcess: proc,
        };
        rss.push([`users ${size >= 100_000 ? '100k' : '1k'} (postgres)`, proc.peakRssKb]);
      } catch (error) {
        throw withProcessState(error, service.proc);
      } finally {
        await stopProcess(service.proc);
      }
    } finally {
      await dropDatabase(db).catch((error) => log(`drop ${db}: ${error.message}`));
    }
  }
  const small = out[1_000];
  const large = out[100_000];
  const ratio = large.p50 / small.p50;
  results.scenarios.users = {
    path: USERS_PATH,
    connections: USERS_CONNECTIONS,
    '1k': small,
    '100k': large,
    p50Ratio: ratio,
    bulkInsert100k: { rows: large.seedInserted, insertSec: large.seedInsertSec, analyzeSec: large.seedAnalyzeSec },
  };
  const s = '2';
  measuredRow(s, `GET /users 1k users (${USERS_CONNECTIONS} conn)`, small);
  measuredRow(s, `GET /users 100k users (${USERS_CONNECTIONS} conn)`, large, {
    target: 'p50 < 10 ms',
    measured: fmtMs(large.p50),
    result: verdict(large.p50 < 10, cannonErrors(large)),
  });
  row({
    section: s,
    name: 'p50 100k / 1k',
    target: '<= 2',
    measured: fmtRatio(ratio),
    disturbed: small.disturbed || large.disturbed,
    result: verdict(ratio <= 2, cannonErrors(small) + cannonErrors(large)),
  });
  row({
    section: s,
    name: `1k-user seed: one INSERT ... SELECT of ${fmtNum(small.seedInserted)} rows`,
    measured: `${small.seedInsertSec.toFixed(2)} s`,
  });
  row({
    section: s,
    name: `100k-user bulk insert: one INSERT ... SELECT generate_series, ${fmtNum(large.seedInserted)} rows`,
    measured: `${large.seedInsertSec.toFixed(1)} s`,
  });
  row({ section: s, name: '  then ANALYZE users', measured: `${large.seedAnalyzeSec.toFixed(1)} s` });
  return rss;
}

function flowRows(section, label, r, stepNames, extra = {}) {
  row({
    section,
    name: `${label}`,
    rate: `${fmtNum(r.flowsPerSec, 1)} flows/s`,
    p50: r.flow.p50,
    p99: r.flow.p99,
    errors: r.errors,
    ...cpuCells(r.serverCpuShare, r.serverCpuMsPerFlow),
    disturbed: r.disturbed,
    result: r.errors ? 'ERRORS' : '',
    ...extra,
  });
  for (const name of stepNames) {
    const st = r.steps[name] ?? summarize([]);
    row({ section, name: `  ${name}`, p50: st.p50, p99: st.p99 });
  }
}

const FLOWS = [
  { key: 'a', label: 'session: authorize + token', short: 'session', make: sessionFlow, steps: ['GET /authorize', 'POST /token code'] },
  {
    key: 'b',
    label: 'session: authorize + token + refresh',
    short: 'session + refresh',
    make: sessionRefreshFlow,
    steps: ['GET /authorize', 'POST /token code', 'POST /token refresh'],
  },
  {
    key: 'c',
    label: 'fresh browser: login + authorize + token',
    short: 'fresh browser',
    make: freshBrowserFlow,
    steps: ['GET /authorize (no session)', 'GET /login', 'POST /login', 'GET /authorize', 'POST /token code'],
  },
];
const FLOW_KEYS = new Set((process.env.BENCH_FLOWS || FLOWS.map((f) => f.key).join(',')).split(',').map((k) => k.trim()));
for (const key of FLOW_KEYS) {
  if (!FLOWS.some((f) => f.key === key)) {
    process.stderr.write(`BENCH_FLOWS: unknown flow "${key}" (known: ${FLOWS.map((f) => f.key).join(', ')})\n`);
    process.exit(2);
  }
}

/**
 * FLOW_LOOPS loops of `flow` for `durationSec` (after the warm-up when `warmup`), with the server's CPU use
 * meanwhile. The result keeps its samples (for {@link mergeFlowSlices}).
 */
async function measureFlow(label, server, flow, db, { durationSec = DURATION, warmup = true } = {}) {
  // The loops' browsers (a login each, argon2id on the service) are set up outside the measured window: the server's
  // CPU per flow counts the flows alone.
  const states = await loopStates(FLOW_LOOPS, flow.setup);
  const quiet = await quietCpus(label);
  if (warmup && WARMUP > 0) await runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: WARMUP, ...flow, states });
  log(`${label}: ${FLOW_LOOPS} loops, ${durationSec} s`);
  const measured = await withCpu(server.pid, () => runFlowLoops({ concurrency: FLOW_LOOPS, durationSec, ...flow, states }), db);
  if (server.proc.exited) throw withProcessState(new Error(`${label}: the server exited during the measurement`), server.proc);
  const r = measured.value;
  r.serverCpuSec = measured.cpuSec;
  r.serverCpuShare = measured.cpuShare;
  r.serverCpuMsPerFlow = (measured.cpuSec * 1000) / r.flows;
  r.clientCpuShare = measured.clientShare;
  r.postgresCpuShare = measured.postgresShare;
  r.othersCpuShare = measured.othersShare;
  r.disturbed = checkCpuShare(label, measured);
  checkClientShare(label, measured);
  r.waitedForQuietMs = quiet.waitedMs;
  r.peakRssKbSoFar = peakRssKb(server.pid);
  return r;
}

/**
 * Flow `f` measured on two sides (`ordered`: the order of the first pair; one of them the service) in SLICES
 * alternating pairs (A B, B A, A B, ...): each pair's ratio is taken minutes apart from the next, and the verdict is
 * their median, so a slower minute of the machine weighs on both sides alike. Returns each side's merged result by
 * its key, the pairs' ratios (service / the other side), their median and the name of the side measured first.
 */
async function alternateSlices(f, kind, ordered) {
  const slices = Object.fromEntries(ordered.map((side) => [side.key, []]));
  const other = ordered.find((side) => side.key !== 'service').key;
  const pairRatios = [];
  for (let i = 0; i < SLICES; i++) {
    for (const side of i % 2 === 0 ? ordered : [...ordered].reverse()) {
      const { key, name, server, client, user, db } = side;
      const label = `flow (${f.key}) on ${kind}, ${name}${SLICES > 1 ? `, slice ${i + 1}/${SLICES}` : ''}`;
      slices[key].push(await measureFlow(label, server, f.make(client, user), db, { durationSec: DURATION / SLICES, warmup: i === 0 }));
    }
    pairRatios.push(slices.service[i].flowsPerSec / slices[other][i].flowsPerSec);
  }
  const merged = Object.fromEntries(Object.entries(slices).map(([key, list]) => [key, mergeFlowSlices(list)]));
  return { merged, pairRatios, ratio: median(pairRatios), first: ordered[0].name };
}

/** The slices of one side's measurement as one result: totals, all samples' percentiles, time-weighted CPU shares. */
function mergeFlowSlices(slices) {
  const merged = mergeFlowRuns(slices);
  const weighted = (key) => slices.reduce((sum, r) => sum + (r[key] ?? 0) * r.elapsedSec, 0) / merged.elapsedSec;
  const cpuSec = slices.reduce((sum, r) => sum + r.serverCpuSec, 0);
  return {
    ...merged,
    slices: slices.length,
    sliceFlowsPerSec: slices.map((r) => r.flowsPerSec),
    serverCpuShare: weighted('serverCpuShare'),
    serverCpuMsPerFlow: (cpuSec * 1000) / merged.flows,
    clientCpuShare: weighted('clientCpuShare'),
    postgresCpuShare: slices.some((r) => r.postgresCpuShare !== undefined) ? weighted('postgresCpuShare') : undefined,
    othersCpuShare: weighted('othersCpuShare'),
    disturbed: slices.some((r) => r.disturbed),
    waitedForQuietMs: slices.reduce((sum, r) => sum + r.waitedForQuietMs, 0),
    peakRssKbSoFar: Math.max(...slices.map((r) => r.peakRssKbSoFar ?? 0)),
  };
}

/**
 * The slices of one server's autocannon measurement as one result: requests over the summed time, CPU per request
 * over all of them, latency percentiles as the slices' weighted by their requests (autocannon gives percentiles,
 * not samples), the longest request of all.
 */
function mergeCannonSlices(slices) {
  const sum = (key) => slices.reduce((total, r) => total + (r[key] ?? 0), 0);
  // A percentile of all the requests lies between the slices' own: their mean weighted by requests stands for it.
  const weighted = (key) => slices.reduce((total, r) => total + r[key] * r.requestsTotal, 0) / sum('requestsTotal');
  const durationSec = sum('durationSec');
  const requestsTotal = sum('requestsTotal');
  return {
    ...slices[0],
    requestsPerSec: requestsTotal / durationSec,
    requestsTotal,
    durationSec,
    p50: weighted('p50'),
    p90: weighted('p90'),
    p99: weighted('p99'),
    max: Math.max(...slices.map((r) => r.max)),
    ok2xx: sum('ok2xx'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    serverCpuShare: slices.reduce((total, r) => total + r.serverCpuShare * r.durationSec, 0) / durationSec,
    serverCpuMsPerRequest: slices.reduce((total, r) => total + r.serverCpuMsPerRequest * r.requestsTotal, 0) / requestsTotal,
    disturbed: slices.some((r) => r.disturbed),
    waitedForQuietMs: sum('waitedForQuietMs'),
    sliceRequestsPerSec: slices.map((r) => r.requestsPerSec),
    // Which slice a tail comes from: one slow slice (a GC phase, a busy host) moves the weighted p99 alone.
    sliceP99: slices.map((r) => r.p99),
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The rows of one flow measured on the service and on another side (`measured`: {@link alternateSlices}), the line
 * of their ratio with its verdict, and its line in the table of ratios; returns the verdict's record.
 */
function flowComparison({ section, kind, f, measured, other, target, serviceLabel, note = '' }) {
  const { merged, ratio, pairRatios, first } = measured;
  const [service, reference] = [merged.service, merged[other.key]];
  const errors = service.errors + reference.errors;
  const result = target ? verdict(ratio >= target, errors) : errors ? 'FAIL (errors)' : 'info';
  flowRows(section, serviceLabel, service, f.steps);
  flowRows(section, `(${f.key}) the same: ${other.name}${note}`, reference, f.steps);
  const disturbed = service.disturbed || reference.disturbed;
  row({
    section,
    name: `(${f.key}) flows/s service / ${other.name} (${first} first)`,
    target: target ? `>= ${target}` : 'info only',
    measured: fmtRatio(ratio),
    disturbed,
    result,
  });
  // How much less CPU a flow costs the service, whatever share of its core it got: on PostgreSQL the database's
  // backends also run on the server's CPU at times, which the peer (in memory) never shares.
  const cpuRatio = reference.serverCpuMsPerFlow / service.serverCpuMsPerFlow;
  const busy = (x) => `${Math.round(x.serverCpuShare * 100)}%`;
  row({
    section,
    name: `(${f.key}) CPU per flow ${other.name} / service (busy ${busy(reference)} / ${busy(service)})`,
    target: 'info only',
    measured: fmtRatio(cpuRatio),
    disturbed,
    result: 'info',
    gapAfter: true,
  });
  const side = (x) => ({ rate: x.flowsPerSec, unit: 'flows/s', p50: x.flow.p50, p99: x.flow.p99, errors: x.errors });
  comparisons.push({
    group: f.key,
    name: `(${f.key}) ${f.short} / ${other.name}${note}`,
    db: kind,
    service: side(service),
    other: side(reference),
    ratio,
    target: target ? `>= ${target}` : 'info only',
    result,
    first,
    disturbed,
  });
  return { ratio, pairRatios, cpuRatio, target: target ?? null, first, result };
}

/** A fresh database for a flows block: a SQLite file, or a PostgreSQL database `{ db, url }` (dropped by {@link dropStore}). */
async function flowsStore(kind, name) {
  if (kind === 'sqlite') return { url: `sqlite:${tmpSqlite(name)}` };
  const db = await createDatabase();
  return { db, url: databaseUrl(db) };
}

async function dropStore(store) {
  if (store.db) await dropDatabase(store.db).catch((error) => log(`drop ${store.db}: ${error.message}`));
  else removeSqlite(store.url.slice('sqlite:'.length));
}

/** A running service (this build's or BENCH_BASE's) as one side of a flows comparison, with the bench's trusted client. */
function serviceSide(key, name, server, db) {
  return {
    key,
    name,
    server,
    client: new OAuthClient({ issuer: server.issuer, ...server.demo }),
    user: { email: server.demo.email, password: server.demo.password },
    db,
  };
}

/** One access token of the peer, checked as a resource server would: RS256 JWT, typ at+jwt, issuer, audience. */
async function checkPeerToken(client, user, ready) {
  const tokens = await client.tokens(await client.loggedInJar(user.email, user.password));
  await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(`${ready.issuer}/jwks`)), {
    algorithms: ['RS256'],
    typ: 'at+jwt',
    issuer: ready.issuer,
    audience: ready.audience,
  });
}

// 3. The code flow with PKCE on SQLite and PostgreSQL, the service against oidc-provider: (a) session, (b) + refresh,
// 5. Sign-ins per second on the service's one core, in fresh browsers: the password form (argon2id) against a
// passkey alone (the options, then the assertion's verification and the session). SIGN_IN_LOOPS loops, each with its
// own passkey of the demo person (a counter per authenticator, as a device has); the two kinds alternate in slices
// (password, passkey, passkey, password), each after its own warm-up. Target: passkey >= 5x password.
const SIGN_IN_LOOPS = 4;
const PASSKEY_RATIO_TARGET = 5;

async function signInScenario() {
  const section = '5';
  let service;
  try {
    service = await startService({
      name: 'service (sign-in, sqlite)',
      port: await freePort(),
      databaseUrl: `sqlite:${tmpSqlite('sign-in')}`,
      expectDemo: true,
    });
    const client = new OAuthClient({ issuer: service.issuer, ...service.demo });
    // Passkeys for the demo person; the password sign-ins are another person's, who has none (else the password
    // would lead to the passkey step).
    const signedIn = await client.loggedInJar(service.demo.email, service.demo.password);
    const email = 'password-only@bench.example';
    const password = randomBytes(12).toString('base64url');
    createServiceUser(service, { email, password });
    const authenticators = [];
    // The first passkey in the password session; the others in a session signed in with it (a person who has a
    // factor adds another only after using one, see docs/sign-in-security.md).
    authenticators.push(await registerPasskey(client, signedIn));
    const strong = await passkeySignIn(client, authenticators[0], (_name, fn) => fn());
    for (let i = 1; i < SIGN_IN_LOOPS; i++) authenticators.push(await registerPasskey(client, strong));
    const flows = {
      password: async (step) => {
        const jar = new CookieJar();
        const form = await client.loginForm(jar, '/login?return_to=%2F');
        await step('POST /login', () => client.login(jar, form, email, password));
      },
      passkey: (step, authenticator) => passkeySignIn(client, authenticator, step),
    };
    const run = async (kind, durationSec) => {
      let next = 0;
      return runFlowLoops({ concurrency: SIGN_IN_LOOPS, durationSec, setup: async () => authenticators[next++], flow: flows[kind] });
    };
    for (const kind of ['password', 'passkey']) if (WARMUP) await run(kind, WARMUP);
    const slices = { password: [], passkey: [] };
    for (const kind of ['password', 'passkey', 'passkey', 'password']) {
      await quietCpus(`sign-in ${kind}`);
      slices[kind].push(await run(kind, DURATION / 2));
    }
    const merged = Object.fromEntries(Object.entries(slices).map(([kind, list]) => [kind, mergeFlowRuns(list)]));
    const ratio = merged.passkey.flowsPerSec / merged.password.flowsPerSec;
    const errors = merged.password.errors + merged.passkey.errors;
    results.scenarios.signIn = { loops: SIGN_IN_LOOPS, ...merged, ratio };
    for (const kind of ['password', 'passkey']) {
      const r = merged[kind];
      row({
        section,
        name: `${kind === 'password' ? 'password sign-in (argon2id)' : 'passkey sign-in (assertion + session)'}, ${SIGN_IN_LOOPS} loops`,
        rate: `${fmtNum(r.flowsPerSec, 1)} sign-ins/s`,
        p50: r.flow.p50,
        p99: r.flow.p99,
        errors: String(r.errors),
      });
    }
    row({
      section,
      name: 'passkey / password sign-ins per second',
      target: `>= ${PASSKEY_RATIO_TARGET}`,
      measured: fmtRatio(ratio),
      result: verdict(ratio >= PASSKEY_RATIO_TARGET, errors),
    });
    const proc = await stopService(service);
    return [['sign-in (sqlite)', proc.peakRssKb]];
  } catch (error) {
    throw withProcessStates(error, service);
  } finally {
    if (service) await stopProcess(service.proc);
  }
}

// 6. DPoP (RFC 9449) against bearer tokens on the same service (SQLite), alternating slices (bearer, DPoP, DPoP,
// bearer) after a warm-up of each: GET /api/resource with 50 connections, a fresh proof per request (the same
// request machinery for both, bench/lib/dpop-cannon.mjs), target DPoP >= 0.6x bearer; and the code flow (a) with a
// proof at /token (DPoP-bound tokens), target >= 0.8x the bearer code flow.
const DPOP_RESOURCE_TARGET = 0.6;
const DPOP_FLOW_TARGET = 0.8;

async function dpopScenario() {
  const section = '6';
  let service;
  try {
    service = await startService({
      name: 'service (dpop, sqlite)',
      port: await freePort(),
      databaseUrl: `sqlite:${tmpSqlite('dpop')}`,
      expectDemo: true,
    });
    const key = DpopKey.generate();
    const clients = {
      bearer: new OAuthClient({ issuer: service.issuer, ...service.demo }),
      dpop: new OAuthClient({ issuer: service.issuer, ...service.demo, dpop: key }),
    };
    const keys = { dpop: key };
    const url = `${service.issuer}/api/resource`;
    const tokens = {};
    for (const kind of ['bearer', 'dpop']) {
      tokens[kind] = (await clients[kind].tokens(await clients[kind].loggedInJar(service.demo.email, service.demo.password))).access_token;
    }
    const proofCheck = await fetch(url, { headers: { authorization: `DPoP ${tokens.dpop}`, dpop: key.proof('GET', url, tokens.dpop) } });
    if (proofCheck.status !== 200) throw new Error(`GET /api/resource with a DPoP token answered ${proofCheck.status}`);
    const cannon = (kind) => ({
      url,
      connections: RESOURCE_CONNECTIONS,
      dpop: { scheme: kind === 'bearer' ? 'bearer' : 'dpop', token: tokens[kind], privateJwk: keys[kind]?.privateJwk },
    });
    // The token's proof checks and the jti store need a warm process, as the bearer path does.
    if (WARMUP) for (const kind of ['bearer', 'dpop']) await autocannon({ ...cannon(kind), durationSec: WARMUP });
    const resource = { bearer: [], dpop: [] };
    for (const kind of ['bearer', 'dpop', 'dpop', 'bearer']) {
      await quietCpus(`resource ${kind}`);
      const measured = await withCpu(service.pid, () => autocannon({ ...cannon(kind), durationSec: DURATION / 2 }));
      resource[kind].push({ ...measured.value, serverCpuShare: measured.cpuShare, cpuSec: measured.cpuSec });
    }
    const perSec = (list) => list.reduce((sum, r) => sum + r.requestsTotal, 0) / list.reduce((sum, r) => sum + r.durationSec, 0);
    const rate = { bearer: perSec(resource.bearer), dpop: perSec(resource.dpop) };
    const resourceRatio = rate.dpop / rate.bearer;
    const resourceErrors = [...resource.bearer, ...resource.dpop].reduce((sum, r) => sum + cannonErrors(r), 0);

    // The flows in a process of their own, as the other scenarios keep the resource load and the flows apart (each
    // process's peak RSS is checked).
    const resourceProc = await stopService(service);
    service = await startService({
      name: 'service (dpop flows, sqlite)',
      port: await freePort(),
      databaseUrl: `sqlite:${tmpSqlite('dpop-flows')}`,
      expectDemo: true,
    });
    const user = { email: service.demo.email, password: service.demo.password };
    const flowClients = {
      bearer: new OAuthClient({ issuer: service.issuer, ...service.demo }),
      dpop: new OAuthClient({ issuer: service.issuer, ...service.demo, dpop: key }),
    };
    const flows = { bearer: sessionFlow(flowClients.bearer, user), dpop: sessionFlow(flowClients.dpop, user) };
    if (WARMUP) for (const kind of ['bearer', 'dpop']) await runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: WARMUP, ...flows[kind] });
    const flowSlices = { bearer: [], dpop: [] };
    for (const kind of ['bearer', 'dpop', 'dpop', 'bearer']) {
      await quietCpus(`code flow ${kind}`);
      flowSlices[kind].push(await runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: DURATION / 2, ...flows[kind] }));
    }
    const flow = Object.fromEntries(Object.entries(flowSlices).map(([kind, list]) => [kind, mergeFlowRuns(list)]));
    const flowRatio = flow.dpop.flowsPerSec / flow.bearer.flowsPerSec;
    results.scenarios.dpop = {
      resource: { bearerPerSec: rate.bearer, dpopPerSec: rate.dpop, ratio: resourceRatio, slices: resource },
      codeFlow: { bearer: flow.bearer, dpop: flow.dpop, ratio: flowRatio },
    };
    const cpuPerRequest = (list) => (list.reduce((sum, r) => sum + r.cpuSec, 0) * 1000) / list.reduce((sum, r) => sum + r.requestsTotal, 0);
    const resourceNames = { bearer: 'bearer token', dpop: 'DPoP token + ES256 proof' };
    for (const kind of ['bearer', 'dpop']) {
      const last = resource[kind].at(-1);
      row({
        section,
        name: `GET /api/resource, ${resourceNames[kind]} (${RESOURCE_CONNECTIONS} conn)`,
        cpuOp: fmtMs(cpuPerRequest(resource[kind])),
        rate: `${fmtNum(rate[kind])} req/s`,
        p50: last.p50,
        p99: last.p99,
        errors: String(resource[kind].reduce((sum, r) => sum + cannonErrors(r), 0)),
      });
    }
    row({
      section,
      name: 'req/s DPoP / bearer',
      target: `>= ${DPOP_RESOURCE_TARGET}`,
      measured: fmtRatio(resourceRatio),
      result: verdict(resourceRatio >= DPOP_RESOURCE_TARGET, resourceErrors),
    });
    for (const kind of ['bearer', 'dpop']) {
      row({
        section,
        name: `code flow (a), ${kind === 'dpop' ? 'DPoP proof at /token' : 'bearer'}, ${FLOW_LOOPS} loops`,
        rate: `${fmtNum(flow[kind].flowsPerSec)} flows/s`,
        p50: flow[kind].flow.p50,
        p99: flow[kind].flow.p99,
        errors: String(flow[kind].errors),
      });
    }
    row({
      section,
      name: 'code flows/s DPoP / bearer',
      target: `>= ${DPOP_FLOW_TARGET}`,
      measured: fmtRatio(flowRatio),
      result: verdict(flowRatio >= DPOP_FLOW_TARGET, flow.bearer.errors + flow.dpop.errors),
    });
    const flowsProc = await stopService(service);
    return [
      ['dpop resource (sqlite)', resourceProc.peakRssKb],
      ['dpop flows (sqlite)', flowsProc.peakRssKb],
    ];
  } catch (error) {
    throw withProcessStates(error, service);
  } finally {
    if (service) await stopProcess(service.proc);
  }
}

/**
 * The code flows on one database: (a) a logged-in session, (b) the same with a refresh, (c) a fresh browser with
 * login. One service process and one fresh peer process per database, both alive for the whole block (the one not
 * measured is idle); who goes first alternates per flow, and is reversed on PostgreSQL. With BENCH_BASE, two more
 * processes (this build's service and the other build's, each on a fresh database of its own) and, after each of
 * (a) and (b), that flow again on those two, side by side.
 */
async function flowsScenario(kind) {
  const store = await flowsStore(kind, 'flows');
  const out = {};
  const peerOut = { version: packageVersion(path.join(BENCH_DIR, 'node_modules', 'oidc-provider')) };
  const comparison = {};
  const baseOut = BASE ? { build: { dir: BASE.root, commit: BASE.commit }, comparison: {} } : undefined;
  const section = `3 ${kind}`;
  let service;
  let peer;
  let base;
  try {
    service = await startService({ name: `service (flows, ${kind})`, port: await freePort(), databaseUrl: store.url, expectDemo: true });
    peer = await startPeer({
      name: `${PEER_NAME} (flows, ${kind})`,
      script: PEER_SCRIPT,
      port: await freePort(),
      healthPath: '/.well-known/openid-configuration',
    });
    const sides = {
      service: serviceSide('service', 'service', service, store.db),
      peer: {
        key: 'peer',
        name: PEER_NAME,
        server: peer,
        client: new PeerOAuthClient(peer.ready),
        user: { email: peer.ready.email, password: peer.ready.password },
        db: store.db,
      },
    };
    if (BASE) {
      // This build and the other each as a fresh process on a fresh database, so that both sides of their comparison
      // have the same history (the service above also carries the rows of the peer comparison).
      base = {};
      for (const [key, name, build] of [
        ['service', 'service', undefined],
        ['base', `base build ${BASE.commit}`, BASE],
      ]) {
        const twin = (base[key] = { store: await flowsStore(kind, `flows-${key}-side-by-side`) });
        twin.server = await startService({
          name: `${name} (side by side, flows, ${kind})`,
          port: await freePort(),
          databaseUrl: twin.store.url,
          expectDemo: true,
          build,
        });
        twin.side = serviceSide(key, name, twin.server, twin.store.db);
      }
    }
    await checkPeerToken(sides.peer.client, sides.peer.user, peer.ready);
    for (const [index, f] of FLOWS.entries()) {
      if (!FLOW_KEYS.has(f.key)) continue;
      // SQLite: service first for (a) and (c), peer first for (b); PostgreSQL the other way round.
      const peerFirst = (index % 2 === 1) === (kind === 'sqlite');
      const order = peerFirst ? ['peer', 'service'] : ['service', 'peer'];
      const measured = await alternateSlices(
        f,
        kind,
        order.map((side) => sides[side]),
      );
      out[f.key] = measured.merged.service;
      peerOut[f.key] = measured.merged.peer;
      const loginNote = f.key === 'c' ? ' (login: SHA-256, not argon2id)' : '';
      comparison[f.key] = flowComparison({
        section,
        kind,
        f,
        measured,
        other: sides.peer,
        target: FLOW_TARGETS[f.key],
        serviceLabel: `(${f.key}) ${f.label}, ${FLOW_LOOPS} loops: service`,
        note: loginNote,
      });
      if (!base || !FLOW_TARGETS[f.key]) continue;
      // This build against BENCH_BASE's, in the same alternation (the service first where it went first above).
      const baseOrder = order[0] === 'peer' ? ['base', 'service'] : ['service', 'base'];
      const againstBase = await alternateSlices(
        f,
        kind,
        baseOrder.map((key) => base[key].side),
      );
      baseOut[f.key] = againstBase.merged.base;
      baseOut[`service_${f.key}`] = againstBase.merged.service;
      baseOut.comparison[f.key] = flowComparison({
        section,
        kind,
        f,
        measured: againstBase,
        other: base.base.side,
        target: BASE_RATIO_TARGET,
        serviceLabel: `(${f.key}) side by side with the ${base.base.side.name}: service (a process of its own)`,
      });
    }
    if (FLOW_KEYS.has('c')) {
      // The cost of one login (the service's argon2id) without contention: one loop, a fixed number of logins.
      log(`login alone on ${kind}: ${LOGIN_ALONE_COUNT} sequential logins`);
      const { client, user } = sides.service;
      const alone = await runFlowLoops({
        concurrency: 1,
        durationSec: 60,
        maxIterations: LOGIN_ALONE_COUNT,
        setup: async () => undefined,
        flow: async (step) => {
          const jar = new CookieJar();
          const form = await client.loginForm(jar, '/login?return_to=%2F');
          await step('POST /login', () => client.login(jar, form, user.email, user.password));
        },
      });
      const loginAlone = alone.steps['POST /login'] ?? summarize([]);
      out.loginAlone = loginAlone;
      row({ section, name: `POST /login alone (argon2id), 1 loop x ${loginAlone.count}`, p50: loginAlone.p50, p99: loginAlone.p99 });
      row({ section, name: 'POST /login under flow (c) load', p50: out.c.steps['POST /login']?.p50, p99: out.c.steps['POST /login']?.p99 });
    }
    out.serviceProcess = await stopService(service);
    peerOut.process = await stopPeer(peer);
    if (base) {
      baseOut.serviceProcess = await stopService(base.service.server);
      baseOut.process = await stopService(base.base.server);
    }
  } catch (error) {
    throw withProcessStates(error, service, peer, base?.service?.server, base?.base?.server);
  } finally {
    if (service) await stopProcess(service.proc);
    if (peer) await stopProcess(peer.proc);
    await dropStore(store);
    for (const twin of Object.values(base ?? {})) {
      if (twin.server) await stopProcess(twin.server.proc);
      await dropStore(twin.store);
    }
  }
  results.scenarios[`flows_${kind}`] = { ...out, peer: peerOut, comparison, ...(baseOut ? { base: baseOut } : {}) };
  const flows = [...FLOW_KEYS].join('+');
  return [
    [`flows ${flows} (${kind})`, out.serviceProcess.peakRssKb],
    [`${PEER_NAME} flows ${flows} (${kind}, info)`, peerOut.process.peakRssKb, true],
    ...(baseOut
      ? [
          [`flows ${flows} side by side with the base build (${kind})`, baseOut.serviceProcess.peakRssKb],
          [`base build ${BASE.commit} flows ${flows} (${kind}, info)`, baseOut.process.peakRssKb, true],
        ]
      : []),
  ];
}

/** Lines of a text table; `right` holds the indexes of right-aligned columns, `gaps` the rows followed by a blank line. */
function formatTable(headers, cells, right, gaps = new Set()) {
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) =>
    c
      .map((v, i) => (right.has(i) ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [line(headers), widths.map((w) => '-'.repeat(w)).join('  ')];
  cells.forEach((c, i) => {
    out.push(line(c));
    if (gaps.has(i) && i < cells.length - 1) out.push('');
  });
  return out;
}

function printTable() {
  const headers = ['#', 'scenario', 'throughput', 'p50', 'p99', 'errors', 'srv cpu', 'cpu/op', 'target', 'measured', 'result'];
  const cells = rows.map((r) => [
    r.section,
    r.name,
    r.rate,
    Number.isFinite(r.p50) ? fmtMs(r.p50) : '',
    Number.isFinite(r.p99) ? fmtMs(r.p99) : '',
    r.errors === '' ? '' : String(r.errors),
    r.cpu,
    r.cpuOp,
    r.target,
    r.measured,
    r.disturbed ? `${r.result} *`.trim() : r.result,
  ]);
  // A blank line between sections (and databases), and after each flow's comparison.
  const gaps = new Set(rows.flatMap((r, i) => (r.gapAfter || (i + 1 < rows.length && rows[i + 1].section !== r.section) ? [i] : [])));
  const out = formatTable(headers, cells, new Set([2, 3, 4, 5, 6, 7, 9]), gaps);
  if (rows.some((r) => r.disturbed)) {
    out.push('', `* other processes used more than ${DISTURBED_SHARE * 100}% of a bench CPU during this measurement (see warnings)`);
  }
  out.push('srv cpu: CPU share the server process used (100% = CPU 0 saturated); cpu/op: server CPU time per request or flow');
  if (rows.some((r) => r.section.startsWith('3'))) {
    out.push(
      `flows: GET /login and POST /login of ${PEER_NAME} are its interaction endpoints (GET /interaction/<uid>, POST .../login),` +
        ' its GET /authorize after a login is GET /auth/<uid>',
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

/** The ratios to the reference servers with their verdicts, one line each, and the 100k-user bulk insert time. */
function printComparisons() {
  const out = [];
  if (comparisons.length) {
    // Grouped: the resource ratios, then each flow on SQLite and on PostgreSQL next to each other.
    const groups = ['resource', ...FLOWS.map((f) => f.key)];
    const sorted = comparisons
      .map((c, i) => [c, i])
      .sort(([a, i], [b, j]) => groups.indexOf(a.group) - groups.indexOf(b.group) || i - j)
      .map(([c]) => c);
    const headers = ['service / reference', 'db', 'service', 'p50', 'p99', 'reference', 'p50', 'p99', 'ratio', 'target', 'result', 'first'];
    const rate = (x) => `${fmtNum(x.rate, x.unit === 'flows/s' ? 1 : 0)} ${x.unit}`;
    const cells = sorted.map((c) => [
      c.name,
      c.db,
      rate(c.service),
      fmtMs(c.service.p50),
      fmtMs(c.service.p99),
      rate(c.other),
      fmtMs(c.other.p50),
      fmtMs(c.other.p99),
      fmtRatio(c.ratio),
      c.target,
      c.disturbed ? `${c.result} *` : c.result,
      c.first,
    ]);
    const gaps = new Set(sorted.flatMap((c, i) => (i + 1 < sorted.length && sorted[i + 1].group !== c.group ? [i] : [])));
    out.push('', 'Ratios to the reference servers (p50 / p99: per request or per whole flow)');
    out.push(...formatTable(headers, cells, new Set([2, 3, 4, 5, 6, 7, 8]), gaps));
  }
  const bulk = results.scenarios.users?.bulkInsert100k;
  if (bulk)
    out.push(
      '',
      `100k-user bulk insert: ${bulk.insertSec.toFixed(1)} s (one INSERT ... SELECT generate_series of ${fmtNum(bulk.rows)} rows)`,
    );
  if (out.length) process.stdout.write(`${out.join('\n')}\n`);
}

/** Every `errorSamples` in the results, with its path (e.g. flows_sqlite.peer.a). */
function errorSampleWarnings(node, where, warnings = []) {
  if (!node || typeof node !== 'object') return warnings;
  if (node.errorSamples && Object.keys(node.errorSamples).length) warnings.push(`${where} errors: ${JSON.stringify(node.errorSamples)}`);
  for (const [key, value] of Object.entries(node))
    if (key !== 'errorSamples') errorSampleWarnings(value, where ? `${where}.${key}` : key, warnings);
  return warnings;
}

async function main() {
  const pinned = pinSelf();
  const benchDependencies = enabled('flows-sqlite') || enabled('flows-postgres') ? ensureBenchDependencies() : 'not needed';
  snapshotDist(tmpDir);
  results.environment = env();
  const launch = serviceLaunchConfig();
  const extraArgs = extraServiceNodeArgs();
  const serviceCommand = ['node', ...launch.nodeOptions, ...extraArgs, 'dist/src/main.js'].join(' ');
  results.settings = {
    durationSec: DURATION,
    warmupSec: WARMUP,
    serverCpu: SERVER_CPU,
    clientCpu: CLIENT_CPU,
    driverPinned: pinned,
    scenarios: [...ONLY],
    flowLoops: FLOW_LOOPS,
    logLevel: process.env.BENCH_LOG_LEVEL ?? 'info',
    serviceLaunch: {
      command: serviceCommand,
      packageJsonNodeOptions: launch.nodeOptions,
      packageJsonMallocArenaMax: launch.mallocArenaMax ?? null,
      packageJsonMallocMmapThreshold: launch.mallocMmapThreshold ?? null,
    },
    base: BASE ? { dir: BASE.root, commit: BASE.commit, launch: BASE.launch } : null,
    serviceEnv: process.env.BENCH_SERVICE_ENV ?? '',
    serviceNodeArgs: process.env.BENCH_SERVICE_NODE_ARGS ?? '',
    peers: {
      oidcProvider: packageVersion(path.join(BENCH_DIR, 'node_modules', 'oidc-provider')),
      nestCore: packageVersion(path.join(ROOT, 'node_modules', '@nestjs', 'core')),
      express: packageVersion(path.join(ROOT, 'node_modules', 'express')),
      benchDependencies,
    },
  };
  const e = results.environment;
  const st = results.settings;
  const serviceEnvText = [
    launch.mallocArenaMax !== undefined ? `MALLOC_ARENA_MAX=${launch.mallocArenaMax}` : 'no MALLOC_ARENA_MAX',
    launch.mallocMmapThreshold !== undefined ? `MALLOC_MMAP_THRESHOLD_=${launch.mallocMmapThreshold}` : '',
    st.serviceEnv,
  ]
    .filter(Boolean)
    .join(' ');
  process.stdout.write(
    [
      'OAuth resource service benchmark',
      `  date       ${e.date}`,
      `  node       ${e.node} on ${e.platform}`,
      `  cpus       ${e.cpus} x ${e.cpuModel}, ${e.memoryGb} GB RAM, load average ${e.loadAverage.join(' ')}; an RS256 signature ${e.rs256SignMs} ms`,
      `  postgres   ${e.postgres}`,
      `  commit     ${e.commit}`,
      `  settings   ${DURATION} s per measurement after ${WARMUP} s warm-up; servers on CPU ${SERVER_CPU}, load generators on CPU ${CLIENT_CPU}${pinned ? '' : ' (driver not pinned)'}; LOG_LEVEL=${st.logLevel}, stdout piped`,
      `  service    ${serviceCommand}; ${serviceEnvText}`,
      `             (package.json config: nodeOptions ${launch.nodeOptions.length ? `"${launch.nodeOptions.join(' ')}"` : 'none'}, mallocArenaMax ${launch.mallocArenaMax ?? 'none'}${extraArgs.length ? `; BENCH_SERVICE_NODE_ARGS "${extraArgs.join(' ')}"` : ''})`,
      ...(BASE
        ? [`  base       ${BASE.root} at ${BASE.commit} (BENCH_BASE): flows (a) and (b) side by side, target >= ${BASE_RATIO_TARGET}`]
        : []),
      `  references oidc-provider ${st.peers.oidcProvider} (in-memory; bench deps ${benchDependencies}), Nest ${st.peers.nestCore} + Express ${st.peers.express} hello app, node:http+jose baseline; plain node, no flags`,
      '',
    ].join('\n'),
  );
  if (e.cpus < 2) log('warning: fewer than 2 CPUs; the server and the load generator share one');

  const rss = [];
  const scenarios = [
    ['resource', 'resource', () => resourceScenario()],
    ['users', 'users', () => usersScenario()],
    ['flows-sqlite', 'flows sqlite', () => flowsScenario('sqlite')],
    ['flows-postgres', 'flows postgres', () => flowsScenario('postgres')],
    ['sign-in', 'sign-in', () => signInScenario()],
    ['dpop', 'dpop', () => dpopScenario()],
  ];
  for (const [key, label, run] of scenarios) {
    if (!enabled(key)) continue;
    // A second attempt when the first fails: on a shared machine a process of ours may be stopped by someone else.
    for (let attempt = 1; attempt <= SCENARIO_ATTEMPTS; attempt++) {
      log(`scenario: ${label}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
      const rowCount = rows.length;
      const comparisonCount = comparisons.length;
      const noteCount = results.notes.length;
      try {
        rss.push(...(await run()));
        break;
      } catch (error) {
        log(
          `scenario ${label} failed: ${error.stack ?? error.message}${error.cause ? `\ncause: ${error.cause.stack ?? error.cause}` : ''}`,
        );
        rows.length = rowCount;
        comparisons.length = comparisonCount;
        results.notes.length = noteCount;
        if (attempt < SCENARIO_ATTEMPTS && !cleanedUp) {
          results.notes.push(`${label}: attempt ${attempt} failed and was repeated: ${error.message.split('\n')[0].slice(0, 300)}`);
          continue;
        }
        results.scenarioErrors.push(`${label}: ${error.message}`);
        row({ section: label, name: `${label}: could not run (${error.message.split('\n')[0].slice(0, 80)})`, result: 'ERROR' });
      }
    }
  }
  for (const [name, kb, infoOnly] of rss) {
    if (infoOnly) row({ section: '4', name: `peak RSS ${name}`, measured: fmtMb(kb) });
    else rssRow('4', name, kb);
  }
  results.finishedAt = new Date().toISOString();

  process.stdout.write('\n');
  printTable();
  printComparisons();
  const warnings = errorSampleWarnings(results.scenarios, '');
  const procs = [];
  const collect = (o) => {
    if (!o || typeof o !== 'object') return;
    if ('errorLogLines' in o) procs.push(o);
    for (const v of Object.values(o)) collect(v);
  };
  collect(results.scenarios);
  const errorLogs = procs.reduce((n, p) => n + p.errorLogLines, 0);
  if (errorLogs) warnings.push(`the service logged ${errorLogs} error-level lines, e.g. ${procs.flatMap((p) => p.lastErrorLogs)[0]}`);
  for (const failure of [...results.scenarioErrors, ...results.notes]) warnings.push(failure);
  results.warnings = warnings;
  if (warnings.length) process.stdout.write(`\nwarnings:\n${warnings.map((w) => `  - ${w}`).join('\n')}\n`);

  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${results.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`\nresults: ${path.relative(process.cwd(), file)}\n`);
  return results.scenarioErrors.length ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`failed: ${error.stack ?? error.message}`);
} finally {
  await cleanup();
  clearTimeout(watchdog);
}
process.exit(code);
