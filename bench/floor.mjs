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
// Output: the figures, and bench/results/floor-<timestamp>.json. Stops what it started and drops its databases.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runFlowLoops, sessionFlow } from './lib/flows.mjs';
import { OAuthClient } from './lib/oauth.mjs';
import { PeerOAuthClient } from './lib/peer-client.mjs';
import { createDatabase, databaseUrl, dropDatabase } from './lib/pg.mjs';
import {
  ROOT,
  autocannon,
  serviceAdapterModule,
  serviceLaunchConfig,
  startBaseline,
  startPeer,
  startService,
  stopAll,
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
/** The sides in turn, the first one moving on by one each round, so that no side always follows the same one. */
const rotation = (keys, round) => keys.map((_, i) => keys[(round + i) % keys.length]);

async function startFloor(db) {
  const port = await freePort();
  const launch = serviceLaunchConfig();
  const env = {
    DATABASE_URL: databaseUrl(db),
    ISSUER: `http://127.0.0.1:${port}`,
    SERVICE_DIST: path.dirname(path.dirname(serviceAdapterModule())),
  };
  if (launch.mallocArenaMax !== undefined) env.MALLOC_ARENA_MAX = launch.mallocArenaMax;
  if (launch.mallocMmapThreshold !== undefined) env.MALLOC_MMAP_THRESHOLD_ = launch.mallocMmapThreshold;
  return startPeer({ name: 'stack floor', script: 'bench/peer/stack-floor-server.mjs', port, env, nodeArgs: launch.nodeOptions });
}

async function flows(sides) {
  const keys = Object.keys(sides);
  const slices = Object.fromEntries(keys.map((key) => [key, []]));
  for (const key of keys) {
    log(`flow (a), ${key}: warm-up ${WARMUP} s`);
    await runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: WARMUP, ...sessionFlow(sides[key].client, sides[key].user) });
  }
  for (let round = 0; round < SLICES; round++) {
    for (const key of rotation(keys, round)) {
      const side = sides[key];
      const m = await withCpu(
        side.pid,
        () => runFlowLoops({ concurrency: FLOW_LOOPS, durationSec: SECONDS, ...sessionFlow(side.client, side.user) }),
        side.db,
      );
      const { flows: done, flowsPerSec, errors, errorSamples } = m.value;
      if (errors) throw new Error(`${key}: ${errors} failed flows: ${JSON.stringify(errorSamples)}`);
      slices[key].push({
        flowsPerSec,
        cpuMs: (m.cpuSec / done) * 1000,
        postgresMs: side.db ? (m.postgresShare * m.wallSec * 1000) / done : 0,
      });
    }
  }
  const summary = Object.fromEntries(
    keys.map((key) => [
      key,
      {
        flowsPerSec: median(slices[key].map((s) => s.flowsPerSec)),
        cpuMsPerFlow: median(slices[key].map((s) => s.cpuMs)),
        postgresMsPerFlow: median(slices[key].map((s) => s.postgresMs)),
      },
    ]),
  );
  const ratio = (a, b) => median(slices[a].map((s, i) => s.flowsPerSec / slices[b][i].flowsPerSec));
  const ratios = {
    servicePerPeer: ratio('service', 'peer'),
    floorPerPeer: ratio('floor', 'peer'),
    servicePerFloor: ratio('service', 'floor'),
  };
  return { summary, ratios, slices };
}

async function resource(targets) {
  const keys = Object.keys(targets);
  const rounds = Object.fromEntries(keys.map((key) => [key, []]));
  const load = (t, durationSec) =>
    autocannon({ url: t.url, connections: CONNECTIONS, durationSec, headers: { authorization: `Bearer ${t.token}` } });
  for (const key of keys) await load(targets[key], Math.max(3, WARMUP / 2));
  for (let round = 0; round < Math.max(4, SLICES / 2); round++) {
    for (const key of rotation(keys, round)) {
      const m = await withCpu(targets[key].pid, () => load(targets[key], SECONDS * 2));
      if (m.value.non2xx || m.value.errors) throw new Error(`${key}: ${m.value.non2xx} non-2xx answers, ${m.value.errors} errors`);
      rounds[key].push({ requestsPerSec: m.value.requestsPerSec, cpuUs: (m.cpuSec / m.value.requestsTotal) * 1e6, p99: m.value.p99 });
    }
  }
  const summary = Object.fromEntries(
    keys.map((key) => [
      key,
      {
        requestsPerSec: median(rounds[key].map((r) => r.requestsPerSec)),
        cpuUsPerRequest: median(rounds[key].map((r) => r.cpuUs)),
        p99: median(rounds[key].map((r) => r.p99)),
      },
    ]),
  );
  const ratio = (a, b) => median(rounds[a].map((r, i) => r.requestsPerSec / rounds[b][i].requestsPerSec));
  return {
    summary,
    ratios: {
      servicePerBaseline: ratio('service', 'baseline'),
      floorPerBaseline: ratio('floor', 'baseline'),
      servicePerFloor: ratio('service', 'floor'),
    },
    rounds,
  };
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
      `flow (a) flows/s: service / oidc-provider ${r.servicePerPeer.toFixed(2)}x, floor / oidc-provider ${r.floorPerPeer.toFixed(2)}x, service / floor ${r.servicePerFloor.toFixed(2)}x`,
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
      `GET /api/resource req/s: service / baseline ${r.servicePerBaseline.toFixed(2)}x, floor / baseline ${r.floorPerBaseline.toFixed(2)}x, service / floor ${r.servicePerFloor.toFixed(2)}x`,
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
