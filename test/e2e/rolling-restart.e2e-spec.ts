import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HaproxyBalancer } from '../support/haproxy';
import { type Demo, Driver, type Failure, Unexpected } from '../support/live-service';
import { CLI, type RunningService, buildOnce, runToExit, startService } from '../support/service-process';

/**
 * A deploy as docs/deployment.md describes it: two instances of the built service in production mode (so with the
 * production drain, SHUTDOWN_DRAIN_SECONDS unset) on one PostgreSQL database, behind HAProxy running
 * deploy/haproxy.cfg, under a load of code flows and refresh rotations through the balancer. Each instance in turn
 * gets SIGTERM, exits and starts again on its port: no request may fail and no grant may be revoked.
 */

/** The instances share only PostgreSQL: the e2e run's server (TEST_DATABASE_URL), else the local one, in either run. */
const PG_ADMIN = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

async function freshDatabase(): Promise<{ url: string; query(sql: string): Promise<unknown[]>; drop(): Promise<void> }> {
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  const run = async (connectionString: string, sql: string) => {
    const client = new Client({ connectionString });
    await client.connect();
    try {
      return (await client.query(sql)).rows as unknown[];
    } finally {
      await client.end();
    }
  };
  await run(PG_ADMIN, `CREATE DATABASE ${name}`);
  return {
    url: url.toString(),
    query: (sql) => run(url.toString(), sql),
    drop: async () => void (await run(PG_ADMIN, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

/** The service's log lines (pino JSON), without the start banner's plain lines. */
function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

type LogLine = { level: number; msg: string; context?: string; route?: string; res?: { statusCode: number } };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a rolling restart behind HAProxy (deploy/haproxy.cfg), production defaults', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let env: Record<string, string>;
  const instances: RunningService[] = [];
  /** Each instance's process before its restart: what it logged from start to exit. */
  const stopped: RunningService[] = [];
  let balancer: HaproxyBalancer;
  let demo: Demo;

  beforeAll(async () => {
    buildOnce();
    db = await freshDatabase();
    env = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      ISSUER: 'https://auth.example.test',
      KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      TRUST_PROXY: 'true',
      RATE_LIMIT_LOGIN: '100000',
      RATE_LIMIT_TOKEN: '100000',
    };
    // One after the other: the first migrates the empty database.
    instances.push(await startService(env));
    instances.push(await startService(env));
    balancer = await HaproxyBalancer.start(instances.map((i) => new URL(i.baseUrl).host));
    // No demo data in production: a person and a client of the deploy's own, from the command line.
    const quiet = { ...env, LOG_LEVEL: 'silent' };
    const person = [
      '--email',
      'deploy@example.com',
      '--password',
      'a deploy of its own',
      '--name',
      'Deploy',
      '--gender',
      'other',
      '--age',
      '40',
    ];
    const user = runToExit(quiet, [CLI, 'user:create', ...person]);
    expect(user.status, user.output).toBe(0);
    const redirect = `${balancer.baseUrl}/demo/callback`;
    const scope = 'users:read orders:read orders:write';
    const client = runToExit(quiet, [CLI, 'client:create', '--name', 'Deploy', '--redirect-uri', redirect, '--trusted', '--scope', scope]);
    expect(client.status, client.output).toBe(0);
    const { client_id, client_secret } = JSON.parse(client.output) as { client_id: string; client_secret: string };
    demo = { email: 'deploy@example.com', password: 'a deploy of its own', clientId: client_id, clientSecret: client_secret };
  }, 180_000);

  afterAll(async () => {
    await balancer?.stop();
    for (const instance of instances) instance.child.kill('SIGKILL');
    await Promise.all(instances.map((i) => i.exit));
    await db?.drop();
  });

  it('restarts each instance in turn under load: no request fails, every grant stays alive', async () => {
    const failures: Failure[] = [];
    const failed = (error: unknown): Failure =>
      error instanceof Unexpected
        ? error.failure
        : { status: 0, contentType: '', body: `${String(error)} ${String((error as { cause?: unknown }).cause ?? '')}` };
    let steps = 0;
    let refreshes = 0;
    let stop = false;
    /** Until `n` more code flows completed, or a request failed (the test then fails below); a minute is a hang. */
    const progress = async (n: number) => {
      const [target, deadline] = [steps + n, Date.now() + 60_000];
      while (steps < target && failures.length === 0 && Date.now() < deadline) await sleep(100);
    };

    // Code flows: sign-in, authorization, code redemption, a refresh rotation and an order, over and over.
    const drivers = Array.from({ length: 3 }, () => new Driver(balancer.baseUrl, demo));
    const latest: Tokens[] = [];
    const flows = drivers.map(async (driver, i) => {
      while (!stop) {
        try {
          latest[i] = await driver.step();
          steps++;
        } catch (error) {
          failures.push(failed(error));
          await sleep(50);
        }
      }
    });
    // Refresh chains: one grant each, rotated again and again; a lost answer would break the chain for good.
    const chainers = Array.from({ length: 2 }, () => new Driver(balancer.baseUrl, demo));
    const chains = chainers.map(async (driver) => {
      let token = (await driver.step()).refresh_token;
      while (!stop) {
        try {
          token = await refresh(balancer.baseUrl, driver.basicAuthorization, token);
          refreshes++;
        } catch (error) {
          failures.push(failed(error));
          break;
        }
      }
      return { driver, token };
    });

    try {
      // Both instances serve before the first restart, and each restarted one again before the next.
      for (const [index, server] of ['instance1', 'instance2'].entries()) {
        await progress(10);
        const before = { down: balancer.changes(server, 'DOWN').length, up: balancer.changes(server, 'UP').length };
        const instance = instances[index];
        instance.child.kill('SIGTERM');
        expect(await instance.exit).toBe(0);
        stopped.push(instance);
        // The balancer took it out on its readiness 503, before the port closed (not on a refused connection).
        const down = balancer.changes(server, 'DOWN');
        expect(down.length, balancer.output()).toBe(before.down + 1);
        expect(down.at(-1)).toContain('Layer7 wrong status, code: 503');
        instances[index] = await startService(env, Number(new URL(instance.baseUrl).port));
        await balancer.waitFor(server, 'UP', before.up);
      }
      await progress(10);
    } finally {
      stop = true;
      await Promise.all(flows);
    }
    const chained = await Promise.all(chains);
    // Six requests a flow (the chains' first flows too): sign-in form and post, authorization, code, refresh, order.
    const requests = (steps + chainers.length) * 6 + refreshes;
    expect(failures, JSON.stringify(failures.slice(0, 5))).toEqual([]);
    console.info(`rolling restart: ${requests} requests (${steps} code flows, ${refreshes} refreshes), ${failures.length} failed`);

    // Every grant alive: none revoked, and the latest refresh token of each flow and each chain still rotates.
    expect(await db.query('SELECT id FROM grants WHERE revoked_at IS NOT NULL')).toEqual([]);
    for (const [i, driver] of drivers.entries()) {
      await expect(refresh(balancer.baseUrl, driver.basicAuthorization, latest[i].refresh_token)).resolves.toBeTruthy();
    }
    for (const { driver, token } of chained)
      await expect(refresh(balancer.baseUrl, driver.basicAuthorization, token)).resolves.toBeTruthy();

    // Each drain logged one line, at info; nothing was logged at error, the readiness 503s of the drains included.
    for (const instance of [...stopped, ...instances]) expect(logLines(instance.output()).filter((l) => l.level >= 50)).toEqual([]);
    for (const instance of stopped) {
      const lines = logLines(instance.output());
      const drain = lines.slice(lines.findIndex((l) => l.context === 'Shutdown'));
      // Besides that line: the requests it still served while draining and their audit events.
      expect(drain.filter((l) => l.msg !== 'request completed' && l.msg !== 'audit event')).toEqual([
        expect.objectContaining({ level: 30, context: 'Shutdown', msg: expect.stringContaining('SIGTERM received: draining for 5 s') }),
      ]);
      const notReady = drain.filter((l) => l.route === '/health/ready' && l.res?.statusCode === 503);
      expect(notReady.length).toBeGreaterThan(0);
      for (const line of notReady) expect(line).toMatchObject({ level: 30, msg: 'request completed' });
    }
  }, 240_000);
});

type Tokens = { access_token: string; refresh_token: string };

/** One refresh rotation through the balancer: the new refresh token, or {@link Unexpected} with the answer. */
async function refresh(baseUrl: string, authorization: string, token: string): Promise<string> {
  const res = await fetch(`${baseUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }),
  });
  if (res.status !== 200) {
    throw new Unexpected({ status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() });
  }
  return ((await res.json()) as Tokens).refresh_token;
}
