// Closed-loop load for the OAuth code flow: N concurrent loops, each bounded by a deadline and an iteration cap.
import { performance } from 'node:perf_hooks';
import { CookieJar } from './oauth.mjs';
import { summarize } from './util.mjs';

const MAX_ITERATIONS_PER_LOOP = 200_000;
const MAX_ERRORS = 200;

/** The states of `concurrency` loops: `setup()` once for each (a login, for the session flows). */
export function loopStates(concurrency, setup) {
  return Promise.all(Array.from({ length: concurrency }, () => setup()));
}

/**
 * Runs `concurrency` loops for `durationSec`; each loop runs `setup()` once (not measured) and then `flow(step)`
 * until the deadline (or `maxIterations` per loop). `step(name, fn)` times one request of the flow. Returns flows/s
 * and p50/p99 per step. `states` (from {@link loopStates}) are the loops' states set up beforehand, so that a
 * measurement of the server's CPU around this call counts the flows alone.
 */
export async function runFlowLoops({ concurrency, durationSec, setup, flow, states: given, maxIterations = MAX_ITERATIONS_PER_LOOP }) {
  const steps = new Map();
  const flowTimes = [];
  let errors = 0;
  const errorSamples = new Map();
  const noteError = (error) => {
    errors++;
    const key = String(error?.message ?? error).slice(0, 300);
    errorSamples.set(key, (errorSamples.get(key) ?? 0) + 1);
  };
  const step = async (name, fn) => {
    const t0 = performance.now();
    const value = await fn();
    const elapsed = performance.now() - t0;
    let list = steps.get(name);
    if (!list) steps.set(name, (list = []));
    list.push(elapsed);
    return value;
  };

  const states = given ?? (await loopStates(concurrency, setup));
  const started = performance.now();
  const deadline = started + durationSec * 1000;
  let completed = 0;
  await Promise.all(
    states.map(async (state) => {
      for (let i = 0; i < maxIterations && performance.now() < deadline && errors < MAX_ERRORS; i++) {
        const t0 = performance.now();
        try {
          await flow(step, state);
          completed++;
          flowTimes.push(performance.now() - t0);
        } catch (error) {
          noteError(error);
        }
      }
    }),
  );
  const elapsedSec = (performance.now() - started) / 1000;
  return {
    concurrency,
    elapsedSec,
    flows: completed,
    flowsPerSec: completed / elapsedSec,
    flow: summarize(flowTimes),
    steps: Object.fromEntries([...steps].map(([name, list]) => [name, summarize(list)])),
    errors,
    errorSamples: Object.fromEntries(errorSamples),
    // The samples, for merging slices of one measurement (see mergeFlowRuns); not kept in the results.
    samples: { flow: flowTimes, steps },
  };
}

/** One result from several runs of the same flow (slices of a measurement): totals, and percentiles of all samples. */
export function mergeFlowRuns(runs) {
  const flowTimes = runs.flatMap((r) => r.samples.flow);
  const steps = new Map();
  for (const r of runs) for (const [name, list] of r.samples.steps) steps.set(name, [...(steps.get(name) ?? []), ...list]);
  const errorSamples = {};
  for (const r of runs) for (const [key, n] of Object.entries(r.errorSamples)) errorSamples[key] = (errorSamples[key] ?? 0) + n;
  const elapsedSec = runs.reduce((sum, r) => sum + r.elapsedSec, 0);
  const flows = runs.reduce((sum, r) => sum + r.flows, 0);
  return {
    concurrency: runs[0].concurrency,
    elapsedSec,
    flows,
    flowsPerSec: flows / elapsedSec,
    flow: summarize(flowTimes),
    steps: Object.fromEntries([...steps].map(([name, list]) => [name, summarize(list)])),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    errorSamples,
  };
}

/** (a) logged-in session, trusted client: GET /authorize -> 302 with code -> POST /token. */
export function sessionFlow(client, user) {
  return {
    setup: () => client.loggedInJar(user.email, user.password),
    flow: async (step, jar) => {
      const request = client.newRequest();
      const { code } = await step('GET /authorize', () => client.authorize(jar, request.path, request.state));
      if (!code) throw new Error('GET /authorize: the session is gone');
      await step('POST /token code', () => client.exchangeCode(code, request.verifier));
    },
  };
}

/** (b) the same plus one refresh. */
export function sessionRefreshFlow(client, user) {
  return {
    setup: () => client.loggedInJar(user.email, user.password),
    flow: async (step, jar) => {
      const request = client.newRequest();
      const { code } = await step('GET /authorize', () => client.authorize(jar, request.path, request.state));
      if (!code) throw new Error('GET /authorize: the session is gone');
      const tokens = await step('POST /token code', () => client.exchangeCode(code, request.verifier));
      await step('POST /token refresh', () => client.refresh(tokens.refresh_token));
    },
  };
}

/** (c) a fresh browser: GET /authorize -> GET /login -> POST /login -> GET /authorize -> POST /token. */
export function freshBrowserFlow(client, user) {
  return {
    setup: async () => undefined,
    flow: async (step) => {
      const jar = new CookieJar();
      const request = client.newRequest();
      const first = await step('GET /authorize (no session)', () => client.authorize(jar, request.path, request.state));
      if (!first.login) throw new Error('GET /authorize: did not ask to log in');
      const form = await step('GET /login', () => client.loginForm(jar, first.login));
      const returnTo = await step('POST /login', () => client.login(jar, form, user.email, user.password));
      if (returnTo !== request.path) throw new Error(`POST /login: went to ${returnTo}, not back to /authorize`);
      const { code } = await step('GET /authorize', () => client.authorize(jar, returnTo, request.state));
      if (!code) throw new Error('GET /authorize: still no session after login');
      await step('POST /token code', () => client.exchangeCode(code, request.verifier));
    },
  };
}
