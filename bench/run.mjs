// Benchmark of the service (targets from the service contract). Measures, on a machine with 2+ cores:
//   1. GET /api/resource (50 connections) against bench/baseline-server.mjs (bare node:http + jose);
//   2. GET /users?gender=female&sort=age&order=desc&limit=20 (10 connections) on PostgreSQL, 1k and 100k users;
//   3. the OAuth code flow with PKCE (10 loops) on SQLite and PostgreSQL: (a) logged-in session, (b) + refresh,
//      (c) fresh browser with login (argon2id), and the cost of one login alone;
//   4. the peak RSS (VmHWM) of every service process.
// The servers run pinned to CPU 0, the load generators (autocannon children, this driver) to CPU 1.
//
// Run:   npm run bench                      (builds, then runs everything: about 4-6 minutes with the defaults,
//                                            1-2 of them seeding 100k users)
//        BENCH_DURATION=3 npm run bench     (shorter measurements while developing)
//        node bench/run.mjs                 (without the build step; needs an up-to-date dist/)
// Env:   BENCH_DURATION  seconds per measurement (default 10)
//        BENCH_WARMUP    seconds of warm-up before each measurement (default 2; 0 for none)
//        BENCH_ONLY      comma list of resource,users,flows (default: all)
//        BENCH_SERVER_CPU / BENCH_CLIENT_CPU  CPUs for the servers / load generators (default 0 / 1)
//        BENCH_PG_ADMIN_URL  PostgreSQL to create bench_<random> databases in
//                            (default postgres://postgres@127.0.0.1:5432/postgres; needs CREATE DATABASE)
//        BENCH_LOG_LEVEL  the service's LOG_LEVEL (default info; its stdout is piped to this driver and dropped)
//        BENCH_QUIET_WAIT  seconds to wait at most, before each measurement, for the CPUs to be quiet (default 30)
//        BENCH_SERVICE_ENV  extra variables for the service, e.g. "MALLOC_ARENA_MAX=2"
//        BENCH_SERVICE_NODE_ARGS  extra node flags for the service, e.g. "--cpu-prof --cpu-prof-dir=prof"
// Needs: Linux (taskset, /proc), PostgreSQL reachable from 127.0.0.1, a built dist/.
// Output: the environment and one table (targets with PASS/FAIL; "*" marks a measurement during which other
// processes used the bench CPUs), warnings, and the full figures in bench/results/<timestamp>.json.
// Cleans up after itself, also on Ctrl-C: stops every process it started (SIGTERM, then waits), drops its
// databases and deletes its SQLite files. Exit code 0 when every scenario ran (whatever the verdicts), else 1.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freshBrowserFlow, runFlowLoops, sessionFlow, sessionRefreshFlow } from './lib/flows.mjs';
import { CookieJar, OAuthClient } from './lib/oauth.mjs';
import { createDatabase, databaseUrl, dropAllDatabases, dropDatabase, seedUsersTo } from './lib/pg.mjs';
import {
  CLIENT_CPU,
  ROOT,
  SERVER_CPU,
  autocannon,
  peakRssKb,
  snapshotDist,
  waitForQuietCpus,
  withCpu,
  startBaseline,
  startService,
  stopAll,
  stopProcess,
} from './lib/processes.mjs';
import { fmtMb, fmtMs, fmtNum, freePort, summarize } from './lib/util.mjs';

const DURATION = positive('BENCH_DURATION', 10);
const WARMUP = positive('BENCH_WARMUP', 2, true);
const ONLY = new Set(
  (process.env.BENCH_ONLY || 'resource,users,flows')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const RESOURCE_CONNECTIONS = 50;
const USERS_CONNECTIONS = 10;
const FLOW_LOOPS = 10;
const LOGIN_ALONE_COUNT = 20;
const USERS_PATH = '/users?gender=female&sort=age&order=desc&limit=20';
const RSS_LIMIT_KB = 200 * 1024;
const DISTURBED_SHARE = 0.15;
const SCENARIO_ATTEMPTS = 2;
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT ?? 30) * 1000;

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
  notes: [],
  scenarioErrors: [],
};
const rows = results.rows;
let cleanedUp = false;

async function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  await stopAll();
  await dropAllDatabases();
  rmSync(tmpDir, { recursive: true, force: true });
}

// Bounded in time whatever happens: a hung request or process cannot keep the bench alive.
const WATCHDOG_SEC = 900 + 12 * (DURATION + WARMUP) * 2;
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
    postgres = execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-tAc', 'SHOW server_version'], {
      encoding: 'utf8',
      timeout: 10_000,
    }).trim();
  } catch {}
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
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
async function measureCannon(label, opts, server, db) {
  const quiet = await quietCpus(label);
  if (WARMUP > 0) await autocannon({ ...opts, durationSec: WARMUP });
  log(`${label}: ${opts.connections} connections, ${DURATION} s`);
  const load0 = os.loadavg()[0];
  const measured = await withCpu(server.pid, () => autocannon({ ...opts, durationSec: DURATION }), db);
  if (server.proc.exited) throw withProcessState(new Error(`${label}: the server exited during the measurement`), server.proc);
  const disturbed = checkCpuShare(label, measured);
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

// 1. GET /api/resource: the service against the bare node:http + jose baseline.
async function resourceScenario() {
  const file = tmpSqlite('resource');
  const service = await startService({
    name: 'service (resource, sqlite)',
    port: await freePort(),
    databaseUrl: `sqlite:${file}`,
    expectDemo: true,
  });
  let baseline;
  try {
    const client = new OAuthClient({ issuer: service.issuer, ...service.demo });
    const tokens = await client.tokens(await client.loggedInJar(service.demo.email, service.demo.password));
    const token = tokens.access_token;
    const serviceBody = await getJson(`${service.issuer}/api/resource`, token);

    baseline = await startBaseline({
      port: await freePort(),
      issuer: service.issuer,
      audience: service.issuer,
      jwksUrl: `${service.issuer}/.well-known/jwks.json`,
    });
    const baselineBody = await getJson(`${baseline.url}/api/resource`, token);
    if (JSON.stringify(serviceBody) !== JSON.stringify(baselineBody)) {
      throw new Error(`the baseline answers differently: ${JSON.stringify(serviceBody)} vs ${JSON.stringify(baselineBody)}`);
    }

    const headers = { authorization: `Bearer ${token}` };
    const svc = await measureCannon(
      'GET /api/resource (service)',
      { url: `${service.issuer}/api/resource`, connections: RESOURCE_CONNECTIONS, headers },
      service,
    );
    const svcProc = await stopService(service);
    const base = await measureCannon(
      'GET /api/resource (baseline)',
      { url: `${baseline.url}/api/resource`, connections: RESOURCE_CONNECTIONS, headers },
      baseline,
    );
    const basePeak = peakRssKb(baseline.pid);
    await stopProcess(baseline.proc);

    const ratio = svc.requestsPerSec / base.requestsPerSec;
    results.scenarios.resource = { service: svc, baseline: base, ratio, serviceProcess: svcProc, baselinePeakRssKb: basePeak };
    const s = '1';
    row({
      section: s,
      name: `GET /api/resource service (${RESOURCE_CONNECTIONS} conn)`,
      rate: `${fmtNum(svc.requestsPerSec)} req/s`,
      p50: svc.p50,
      p99: svc.p99,
      errors: cannonErrors(svc),
      ...cpuCells(svc.serverCpuShare, svc.serverCpuMsPerRequest),
      disturbed: svc.disturbed,
      target: 'p99 < 20 ms',
      measured: fmtMs(svc.p99),
      result: verdict(svc.p99 < 20, cannonErrors(svc)),
    });
    row({
      section: s,
      name: 'GET /api/resource baseline node:http+jose',
      rate: `${fmtNum(base.requestsPerSec)} req/s`,
      p50: base.p50,
      p99: base.p99,
      errors: cannonErrors(base),
      ...cpuCells(base.serverCpuShare, base.serverCpuMsPerRequest),
      disturbed: base.disturbed,
    });
    row({
      section: s,
      name: 'req/s service / baseline',
      target: '>= 1.0',
      measured: `${ratio.toFixed(2)}x`,
      disturbed: svc.disturbed || base.disturbed,
      result: verdict(ratio >= 1.0, cannonErrors(svc) + cannonErrors(base)),
    });
    return [
      ['resource service (sqlite)', svcProc.peakRssKb],
      ['baseline (info)', basePeak, true],
    ];
  } catch (error) {
    throw withProcessState(error, service.proc);
  } finally {
    await stopProcess(service.proc);
    if (baseline) await stopProcess(baseline.proc);
    removeSqlite(file);
  }
}

// 2. GET /users on PostgreSQL with 1,000 and with 100,000 users (a fresh service process for each size).
async function usersScenario() {
  const db = await createDatabase();
  const url = databaseUrl(db);
  const out = {};
  const rss = [];
  const seedSec = {};
  try {
    let admin;
    for (const size of [1_000, 100_000]) {
      // A fresh process (and port) per size, so that each has its own peak RSS; the admin logs in again.
      const service = await startService({
        name: `service (users ${size}, postgres)`,
        port: await freePort(),
        databaseUrl: url,
        expectDemo: size === 1_000,
      });
      try {
        admin ??= service.demo;
        // The demo client's redirect URI was registered with the first process's address; it is only a string.
        const client = new OAuthClient({
          issuer: service.issuer,
          ...admin,
          redirectUri: admin.redirectUri ?? `${service.issuer}/demo/callback`,
          scope: 'users:read',
        });
        admin.redirectUri = client.redirectUri;
        const token = (await client.tokens(await client.loggedInJar(admin.email, admin.password))).access_token;
        log(`seeding users to ${size}`);
        const seedStart = performance.now();
        const seeded = await seedUsersTo(db, size);
        seedSec[size] = (performance.now() - seedStart) / 1000;
        if (seeded.users !== size || seeded.counted !== size) throw new Error(`seeding: ${JSON.stringify(seeded)}`);
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
        out[size] = { ...r, total: page.page.total, seedSec: seedSec[size], serviceProcess: proc };
        rss.push([`users ${size >= 100_000 ? '100k' : '1k'} (postgres)`, proc.peakRssKb]);
      } catch (error) {
        throw withProcessState(error, service.proc);
      } finally {
        await stopProcess(service.proc);
      }
    }
  } finally {
    await dropDatabase(db).catch((error) => log(`drop ${db}: ${error.message}`));
  }
  const small = out[1_000];
  const large = out[100_000];
  const ratio = large.p50 / small.p50;
  results.scenarios.users = { path: USERS_PATH, connections: USERS_CONNECTIONS, '1k': small, '100k': large, p50Ratio: ratio };
  const s = '2';
  row({
    section: s,
    name: `GET /users 1k users (${USERS_CONNECTIONS} conn)`,
    rate: `${fmtNum(small.requestsPerSec)} req/s`,
    p50: small.p50,
    p99: small.p99,
    errors: cannonErrors(small),
    ...cpuCells(small.serverCpuShare, small.serverCpuMsPerRequest),
    disturbed: small.disturbed,
  });
  row({
    section: s,
    name: `GET /users 100k users (${USERS_CONNECTIONS} conn)`,
    rate: `${fmtNum(large.requestsPerSec)} req/s`,
    p50: large.p50,
    p99: large.p99,
    errors: cannonErrors(large),
    ...cpuCells(large.serverCpuShare, large.serverCpuMsPerRequest),
    disturbed: large.disturbed,
    target: 'p50 < 10 ms',
    measured: fmtMs(large.p50),
    result: verdict(large.p50 < 10, cannonErrors(large)),
  });
  row({
    section: s,
    name: 'p50 100k / 1k',
    target: '<= 2',
    measured: `${ratio.toFixed(2)}x`,
    disturbed: small.disturbed || large.disturbed,
    result: verdict(ratio <= 2, cannonErrors(small) + cannonErrors(large)),
  });
  row({ section: s, name: 'seed 999 users, one INSERT ... SELECT', measured: `${small.seedSec.toFixed(1)} s` });
  row({ section: s, name: 'seed 99,000 more users, one INSERT ... SELECT', measured: `${large.seedSec.toFixed(1)} s` });
  return rss;
}

function flowRows(section, label, r, stepNames) {
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
  });
  for (const name of stepNames) {
    const st = r.steps[name] ?? summarize([]);
    row({ section, name: `  ${name}`, p50: st.p50, p99: st.p99 });
  }
}

// 3. The code flow with PKCE on SQLite and PostgreSQL: (a) session, (b) + refresh, (c) fresh browser with login.
async function flowsScenario(kind) {
  let db;
  let url;
  if (kind === 'sqlite') {
    url = `sqlite:${tmpSqlite('flows')}`;
  } else {
    db = await createDatabase();
    url = databaseUrl(db);
  }
  const out = {};
  const section = kind === 'sqlite' ? '3 sqlite' : '3 postgres';
  try {
    const service = await startService({ name: `service (flows, ${kind})`, port: await freePort(), databaseUrl: url, expectDemo: true });
    try {
      const client = new OAuthClient({ issuer: service.issuer, ...service.demo });
      const user = { email: service.demo.email, password: service.demo.password };
      const flows = [
        ['a', 'session: authorize + token', sessionFlow(client, user), ['GET /authorize', 'POST /token code']],
        [
          'b',
          'session: authorize + token + refresh',
          sessionRefreshFlow(client, user),
          ['GET /authorize', 'POST /token code', 'POST /token refresh'],
        ],
        [
          'c',
          'fresh browser: login + authorize + token',
          freshBrowserFlow(client, user),
          ['GET /authorize (no session)', 'GET /login', 'POST /login', 'GET /authorize', 'POST /token code'],
        ],
      ];
      for (const [key, label, flow, stepNames] of flows) {
        const quiet = await quietCpus(`flow (${key}) on ${kind}`);
        if (WARMUP > 0) await runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: WARMUP, ...flow });
        log(`flow (${key}) ${label} on ${kind}: ${FLOW_LOOPS} loops, ${DURATION} s`);
        const measured = await withCpu(service.pid, () => runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: DURATION, ...flow }), db);
        if (service.proc.exited) throw new Error(`flow (${key}) on ${kind}: the server exited during the measurement`);
        const r = measured.value;
        r.serverCpuShare = measured.cpuShare;
        r.serverCpuMsPerFlow = (measured.cpuSec * 1000) / r.flows;
        r.clientCpuShare = measured.clientShare;
        r.postgresCpuShare = measured.postgresShare;
        r.othersCpuShare = measured.othersShare;
        r.disturbed = checkCpuShare(`flow (${key}) on ${kind}`, measured);
        r.waitedForQuietMs = quiet.waitedMs;
        r.peakRssKbSoFar = peakRssKb(service.pid);
        out[key] = r;
        flowRows(section, `(${key}) ${label}, ${FLOW_LOOPS} loops`, r, stepNames);
      }
      // The cost of one login without contention: one loop, a fixed number of logins.
      log(`login alone on ${kind}: ${LOGIN_ALONE_COUNT} sequential logins`);
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
      out.serviceProcess = await stopService(service);
    } catch (error) {
      throw withProcessState(error, service.proc);
    } finally {
      await stopProcess(service.proc);
    }
  } finally {
    if (db) await dropDatabase(db).catch((error) => log(`drop ${db}: ${error.message}`));
    if (kind === 'sqlite') removeSqlite(url.slice('sqlite:'.length));
  }
  results.scenarios[`flows_${kind}`] = out;
  return [[`flows a+b+c (${kind})`, out.serviceProcess.peakRssKb]];
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
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const right = new Set([2, 3, 4, 5, 6, 7, 9]);
  const line = (c) =>
    c
      .map((v, i) => (right.has(i) ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [line(headers), widths.map((w) => '-'.repeat(w)).join('  ')];
  let previous;
  for (let i = 0; i < cells.length; i++) {
    const section = rows[i].section.split(' ')[0];
    if (previous !== undefined && section !== previous) out.push('');
    previous = section;
    out.push(line(cells[i]));
  }
  if (rows.some((r) => r.disturbed)) {
    out.push('', `* other processes used more than ${DISTURBED_SHARE * 100}% of a bench CPU during this measurement (see warnings)`);
  }
  out.push('srv cpu: CPU share the server process used (100% = CPU 0 saturated); cpu/op: server CPU time per request or flow');
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main() {
  const pinned = pinSelf();
  snapshotDist(tmpDir);
  results.environment = env();
  results.settings = {
    durationSec: DURATION,
    warmupSec: WARMUP,
    serverCpu: SERVER_CPU,
    clientCpu: CLIENT_CPU,
    driverPinned: pinned,
    scenarios: [...ONLY],
    logLevel: process.env.BENCH_LOG_LEVEL ?? 'info',
    serviceEnv: process.env.BENCH_SERVICE_ENV ?? '',
    serviceNodeArgs: process.env.BENCH_SERVICE_NODE_ARGS ?? '',
  };
  const e = results.environment;
  process.stdout.write(
    [
      'OAuth resource service benchmark',
      `  date       ${e.date}`,
      `  node       ${e.node} on ${e.platform}`,
      `  cpus       ${e.cpus} x ${e.cpuModel}, ${e.memoryGb} GB RAM, load average ${e.loadAverage.join(' ')}`,
      `  postgres   ${e.postgres}`,
      `  commit     ${e.commit}`,
      `  settings   ${DURATION} s per measurement after ${WARMUP} s warm-up; servers on CPU ${SERVER_CPU}, load generators on CPU ${CLIENT_CPU}${pinned ? '' : ' (driver not pinned)'}; LOG_LEVEL=${results.settings.logLevel}, stdout piped`,
      ...(results.settings.serviceEnv || results.settings.serviceNodeArgs
        ? [`  service    ${[results.settings.serviceEnv, results.settings.serviceNodeArgs].filter(Boolean).join(' ')}`]
        : []),
      '',
    ].join('\n'),
  );
  if (e.cpus < 2) log('warning: fewer than 2 CPUs; the server and the load generator share one');

  const rss = [];
  const scenarios = [
    ['resource', 'resource', () => resourceScenario()],
    ['users', 'users', () => usersScenario()],
    ['flows', 'flows sqlite', () => flowsScenario('sqlite')],
    ['flows', 'flows postgres', () => flowsScenario('postgres')],
  ];
  for (const [key, label, run] of scenarios) {
    if (!ONLY.has(key)) continue;
    // A second attempt when the first fails: on a shared machine a process of ours may be stopped by someone else.
    for (let attempt = 1; attempt <= SCENARIO_ATTEMPTS; attempt++) {
      log(`scenario: ${label}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
      const rowCount = rows.length;
      const noteCount = results.notes.length;
      try {
        rss.push(...(await run()));
        break;
      } catch (error) {
        log(
          `scenario ${label} failed: ${error.stack ?? error.message}${error.cause ? `\ncause: ${error.cause.stack ?? error.cause}` : ''}`,
        );
        rows.length = rowCount;
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
  const warnings = [];
  for (const [name, scenario] of Object.entries(results.scenarios)) {
    for (const [key, value] of Object.entries(scenario)) {
      if (value && typeof value === 'object' && value.errorSamples && Object.keys(value.errorSamples).length) {
        warnings.push(`${name}.${key} errors: ${JSON.stringify(value.errorSamples)}`);
      }
    }
  }
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
