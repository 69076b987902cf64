// What the service's own work costs over the floor of its stack: the service, bench/peer/stack-floor-server.mjs (the
// same packages and launch settings doing the least the flow needs) and oidc-provider, side by side in one run on
// PostgreSQL, servers pinned to CPU 0 and the load to CPU 1 as in bench/run.mjs:
//   - the code flow (a), a logged-in session: authorize + token, 10 loops, each side's time cut into slices taken in
//     turn (the order rotating), after a warm-up of each; flows/s, server CPU per flow and PostgreSQL's CPU per flow;
//     ratios as medians of the slices' ratios;
//   - GET /api/resource, 50 connections: the service, the floor and the node:http + jose baseline in rotating turns.
// Information for planning, not a target: where the service stands between the peer and what its stack allows.
//
// Run:   npm run build && node bench/floor.mjs
// Env:   FLOOR_ONLY     flows or resource (default both)
//        FLOOR_SLICES   slices per side (default 6); FLOOR_SECONDS per slice (default 2.5); FLOOR_WARMUP seconds (10)
//        BENCH_SERVICE_NODE_ARGS  extra node flags for the service and the floor alike (e.g. "--cpu-prof --cpu-prof-dir=DIR")
// Output: the figures, and bench/results/floor-<timestamp>.json. Stops what it started and drops its databases.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loopStates, runFlowLoops, sessionFlow } from './lib/flows.mjs';
import { OAuthClient } from './lib/oauth.mjs';
import { PeerOAuthClient } from './lib/peer-client.mjs';
import { createDatabase, databaseUrl, dropDatabase } from './lib/pg.mjs';
import {
  ROOT,
  autocannon,
  extraServiceNodeArgs,
  launchEnv,
  serviceDist,
  serviceLaunchConfig,
  startBaseline,
  startPeer,
  startService,
  stopAll,
  waitForQuietCpus,
  withCpu,
} from './lib/processes.mjs';
import { freePort, percentile } from './lib/util.mjs';

const ONLY = process.env.FLOOR_ONLY ?? 'flows,resource';
const SLICES = Number(process.env.FLOOR_SLICES ?? 6);
const SECONDS = Number(process.env.FLOOR_SECONDS ?? 2.5);
const WARMUP = Number(process.env.FLOOR_WARMUP ?? 10);
const FLOW_LOOPS = 10;
const CONNECTIONS = 50;

const log = (line) => process.stderr.write(`[floor ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const median = (values) => percentile(values, 50);
/** Per side, the median of each measure over its slices (or rounds). */
const medians = (bySide) =>
  Object.fromEntries(
    Object.entries(bySide).map(([key, rows]) => [
      key,
      Object.fromEntries(Object.keys(rows[0]).map((m) => [m, median(rows.map((r) => r[m]))])),
    ]),
  );
/**
 * The service and the floor against the reference, and the service against the floor: each the median over the
 * rounds of one side's measure / the other's in the same round.
 */
function ratiosOf(bySide, measure, reference) {
  const ratio = (a, b) => median(bySide[a].map((row, i) => row[measure] / bySide[b][i][measure]));
  return { service: ratio('service', reference), floor: ratio('floor', reference), serviceToFloor: ratio('service', 'floor') };
}
/** As bench/run.mjs before each measurement: waits (30 s at most) for the CPUs to be quiet, e.g. after autovacuum. */
async function quiet(label) {
  const { busyShare, waitedMs } = await waitForQuietCpus(30_000);
  if (busyShare >= 0.2) log(`${label}: the CPUs are still ${(busyShare * 100).toFixed(0)}% busy after ${waitedMs} ms; measuring anyway`);
}
/** The sides in turn, the first one moving on by one each round, so that no side always follows the same one. */
const rotation = (keys, round) => keys.map((_, i) => keys[(round + i) % keys.length]);

async function startFloor(db) {
  const port = await freePort();
  const launch = serviceLaunchConfig();
  const env = { DATABASE_URL: databaseUrl(db), ISSUER: `http://127.0.0.1:${port}`, SERVICE_DIST: serviceDist(), ...launchEnv(launch) };
  return startPeer({
    name: 'stack floor',
    script: 'bench/peer/stack-floor-server.mjs',
    port,
    env,
    nodeArgs: [...launch.nodeOptions, ...extraServiceNodeArgs()],
  });
}

async function flows(sides) {
  const keys = Object.keys(sides);
  const slices = Object.fromEntries(keys.map((key) => [key, []]));
  // Each side's logged-in browsers, made once: the measured windows hold the flows alone (the service's logins are argon2id).
  const flowOf = {};
  for (const key of keys) {
    const flow = sessionFlow(sides[key].client, sides[key].user);
    flowOf[key] = { ...flow, states: await loopStates(FLOW_LOOPS, flow.setup) };
    log(`flow (a), ${key}: warm-up ${WARMUP} s`);
    await runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: WARMUP, ...flowOf[key] });
  }
  for (let round = 0; round < SLICES; round++) {
    for (const key of rotation(keys, round)) {
      const side = sides[key];
      await quiet(`flow (a), ${key}`);
      const m = await withCpu(side.pid, () => runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: SECONDS, ...flowOf[key] }), side.db);
      const { flows: done, flowsPerSec, errors, errorSamples } = m.value;
      if (errors) throw new Error(`${key}: ${errors} failed flows: ${JSON.stringify(errorSamples)}`);
      slices[key].push({
        flowsPerSec,
        cpuMsPerFlow: (m.cpuSec / done) * 1000,
        postgresMsPerFlow: side.db ? (m.postgresShare * m.wallSec * 1000) / done : 0,
      });
    }
  }
  return { summary: medians(slices), ratios: ratiosOf(slices, 'flowsPerSec', 'peer'), slices };
}

async function resource(targets) {
  const keys = Object.keys(targets);
  const rounds = Object.fromEntries(keys.map((key) => [key, []]));
  const load = (t, durationSec) =>
    autocannon({ url: t.url, connections: CONNECTIONS, durationSec, headers: { authorization: `Bearer ${t.token}` } });
  for (const key of keys) await load(targets[key], Math.max(3, WARMUP / 2));
  for (let round = 0; round < Math.max(4, SLICES / 2); round++) {
    for (const key of rotation(keys, round)) {
      await quiet(`GET /api/resource, ${key}`);
      const m = await withCpu(targets[key].pid, () => load(targets[key], SECONDS * 2));
      if (m.value.non2xx || m.value.errors) throw new Error(`${key}: ${m.value.non2xx} non-2xx answers, ${m.value.errors} errors`);
      rounds[key].push({
        requestsPerSec: m.value.requestsPerSec,
        cpuUsPerRequest: (m.cpuSec / m.value.requestsTotal) * 1e6,
        p99: m.value.p99,
      });
    }
  }
  return { summary: medians(rounds), ratios: ratiosOf(rounds, 'requestsPerSec', 'baseline'), rounds };
}

const dbs = [];
const results = { settings: { slices: SLICES, secondsPerSlice: SECONDS, warmupSec: WARMUP } };
try {
  dbs.push(await createDatabase(), await createDatabase());
  const service = await startService({ name: 'service', port: await freePort(), databaseUrl: databaseUrl(dbs[0]), expectDemo: true });
  const floor = await startFloor(dbs[1]);
  const peer = await startPeer({
    name: 'oidc-provider',
    script: 'bench/peer/oidc-provider-server.mjs',
    port: await freePort(),
    healthPath: '/.well-known/openid-configuration',
  });
  const floorClient = new OAuthClient({
    issuer: floor.ready.issuer,
    clientId: floor.ready.clientId,
    clientSecret: floor.ready.clientSecret,
  });
  const sides = {
    service: { pid: service.pid, db: dbs[0], client: new OAuthClient({ issuer: service.issuer, ...service.demo }), user: service.demo },
    floor: { pid: floor.pid, db: dbs[1], client: floorClient, user: { email: 'floor@example.com', password: 'unchecked' } },
    peer: { pid: peer.pid, client: new PeerOAuthClient(peer.ready), user: { email: peer.ready.email, password: peer.ready.password } },
  };
  if (ONLY.includes('flows')) {
    results.flows = await flows(sides);
    for (const [key, s] of Object.entries(results.flows.summary)) {
      console.log(
        `flow (a), postgres, ${key.padEnd(7)} ${s.flowsPerSec.toFixed(0).padStart(5)} flows/s  server CPU ${s.cpuMsPerFlow.toFixed(2)} ms/flow  PostgreSQL CPU ${s.postgresMsPerFlow.toFixed(2)} ms/flow`,
      );
    }
    const r = results.flows.ratios;
    console.log(
      `flow (a) flows/s: service / oidc-provider ${r.service.toFixed(2)}x, floor / oidc-provider ${r.floor.toFixed(2)}x, service / floor ${r.serviceToFloor.toFixed(2)}x`,
    );
  }
  if (ONLY.includes('resource')) {
    const tokenOf = async (client, user) => (await client.tokens(await client.loggedInJar(user.email, user.password))).access_token;
    const serviceToken = await tokenOf(sides.service.client, sides.service.user);
    const baseline = await startBaseline({
      port: await freePort(),
      issuer: service.issuer,
      audience: service.issuer,
      jwksUrl: `${service.issuer}/.well-known/jwks.json`,
    });
    results.resource = await resource({
      service: { url: `${service.issuer}/api/resource`, token: serviceToken, pid: service.pid },
      floor: { url: `${floor.ready.issuer}/api/resource`, token: await tokenOf(floorClient, sides.floor.user), pid: floor.pid },
      baseline: { url: `${baseline.url}/api/resource`, token: serviceToken, pid: baseline.pid },
    });
    for (const [key, s] of Object.entries(results.resource.summary)) {
      console.log(
        `GET /api/resource, ${key.padEnd(8)} ${s.requestsPerSec.toFixed(0).padStart(6)} req/s  server CPU ${s.cpuUsPerRequest.toFixed(0)} us/request  p99 ${s.p99} ms`,
      );
    }
    const r = results.resource.ratios;
    console.log(
      `GET /api/resource req/s: service / baseline ${r.service.toFixed(2)}x, floor / baseline ${r.floor.toFixed(2)}x, service / floor ${r.serviceToFloor.toFixed(2)}x`,
    );
  }
  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `floor-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results: ${path.relative(ROOT, file)}`);
} finally {
  await stopAll();
  for (const db of dbs) await dropDatabase(db).catch((error) => log(`drop ${db}: ${error.message}`));
}
