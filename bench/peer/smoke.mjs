// Smoke check of the peers: starts bench/peer/oidc-provider-server.mjs and bench/peer/nest-hello-server.mjs on free
// ports, runs the bench's flows (flows.mjs) against oidc-provider through PeerOAuthClient (2 loops, 10 flows each,
// 3 s at most; all three flows), verifies one access token against the provider's JWKS, sends 200 requests to the hello app, prints
// flows/s, req/s and errors, and stops both servers (SIGTERM; they must exit 0).
//
//   (cd bench && npm install) && node bench/peer/smoke.mjs
//
// Env (for a longer check): SMOKE_LOOPS (default 2), SMOKE_ITERATIONS flows per loop (default 10),
//      SMOKE_DURATION seconds at most per flow (default 3).
// Exit code 0 when everything ran without an error.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { freshBrowserFlow, runFlowLoops, sessionFlow, sessionRefreshFlow } from '../lib/flows.mjs';
import { PeerOAuthClient } from '../lib/peer-client.mjs';
import { freePort, sleep } from '../lib/util.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONCURRENCY = Number(process.env.SMOKE_LOOPS || 2);
const ITERATIONS_PER_LOOP = Number(process.env.SMOKE_ITERATIONS || 10);
const DURATION_SEC = Number(process.env.SMOKE_DURATION || 3);
const HELLO_REQUESTS = 200;
const HELLO_CONCURRENCY = 10;

const children = new Set();

/** Starts `node <script>` with PORT and waits for its JSON ready line; returns { child, ready, exited }. */
async function start(script, port) {
  const child = spawn(process.execPath, [path.join(HERE, script)], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => (children.delete(child), resolve(code ?? signal))));
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script}: no ready line after 30 s\n${stderr}`)), 30_000);
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk;
      const line = stdout.split('\n').find((l) => l.startsWith('{"ready":true'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line));
      }
    });
    exited.then((code) => reject(new Error(`${script} exited (${code}) before it was ready\n${stderr}`)));
  });
  return { child, ready, exited };
}

async function stop(server) {
  server.child.kill('SIGTERM');
  const code = await Promise.race([server.exited, sleep(10_000).then(() => 'timeout')]);
  if (code === 'timeout') server.child.kill('SIGKILL');
  return code;
}

function report(name, r) {
  const steps = Object.entries(r.steps)
    .map(([step, s]) => `${step} p50 ${s.p50.toFixed(1)} ms`)
    .join(', ');
  console.log(
    `${name}: ${r.flows} flows in ${r.elapsedSec.toFixed(2)} s = ${r.flowsPerSec.toFixed(1)} flows/s, errors ${r.errors} (${steps})`,
  );
  for (const [message, count] of Object.entries(r.errorSamples)) console.log(`  ${count} x ${message}`);
  return r.errors;
}

/** HELLO_REQUESTS GETs over HELLO_CONCURRENCY loops; counts anything but 200 {"message":"hello"} as an error. */
async function helloLoad(url) {
  let next = 0;
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: HELLO_CONCURRENCY }, async () => {
      while (next++ < HELLO_REQUESTS) {
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
          const body = await res.json();
          if (res.status !== 200 || body.message !== 'hello') errors++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { requests: HELLO_REQUESTS, errors, reqPerSec: HELLO_REQUESTS / ((performance.now() - t0) / 1000) };
}

let failures = 0;
const servers = [];
try {
  const [peer, hello] = await Promise.all([
    start('oidc-provider-server.mjs', await freePort()),
    start('nest-hello-server.mjs', await freePort()),
  ]);
  servers.push(peer, hello);
  console.log(`oidc-provider on ${peer.ready.issuer}, nest hello on ${hello.ready.url}`);

  const client = new PeerOAuthClient(peer.ready);
  const user = { email: peer.ready.email, password: peer.ready.password };

  // One token, verified as a resource server would (RS256, typ at+jwt, issuer, audience).
  const tokens = await client.tokens(await client.loggedInJar(user.email, user.password));
  const jwks = createRemoteJWKSet(new URL(`${peer.ready.issuer}/jwks`));
  const { payload } = await jwtVerify(tokens.access_token, jwks, {
    algorithms: ['RS256'],
    typ: 'at+jwt',
    issuer: peer.ready.issuer,
    audience: peer.ready.audience,
  });
  console.log(
    `access token: sub ${payload.sub}, client_id ${payload.client_id}, scope "${payload.scope}", exp in ${payload.exp - payload.iat} s`,
  );

  const options = { concurrency: CONCURRENCY, durationSec: DURATION_SEC, maxIterations: ITERATIONS_PER_LOOP };
  failures += report('(a) session', await runFlowLoops({ ...options, ...sessionFlow(client, user) }));
  failures += report('(b) session + refresh', await runFlowLoops({ ...options, ...sessionRefreshFlow(client, user) }));
  failures += report('(c) fresh browser', await runFlowLoops({ ...options, ...freshBrowserFlow(client, user) }));

  const h = await helloLoad(hello.ready.url);
  console.log(`nest hello: ${h.requests} requests (${HELLO_CONCURRENCY} concurrent) = ${h.reqPerSec.toFixed(0)} req/s, errors ${h.errors}`);
  failures += h.errors;
} catch (error) {
  failures++;
  console.error(`smoke failed: ${error.stack ?? error}`);
} finally {
  const codes = await Promise.all(servers.map(stop));
  console.log(`stopped: exit codes ${codes.join(', ')}`);
  if (codes.some((code) => code !== 0)) failures++;
  for (const child of children) child.kill('SIGKILL');
}
console.log(failures === 0 ? 'smoke: OK' : `smoke: FAILED (${failures})`);
process.exit(failures === 0 ? 0 : 1);
