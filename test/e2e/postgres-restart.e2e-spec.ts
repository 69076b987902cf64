import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderBody } from '../support/factories';
import { type RunningService, buildOnce, freePort, startService } from '../support/service-process';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/**
 * The built service under a mixed OAuth load (code flows, refresh rotations, order writes) while its PostgreSQL
 * server terminates every backend and then restarts: the process lives through it, answers 503 problem+json (or
 * the token endpoint's `temporarily_unavailable`) while the database is gone, and serves again within seconds.
 */

interface Demo {
  password: string;
  clientId: string;
  clientSecret: string;
}

function demoFrom(output: string): Demo {
  const password = /admin login:\s+admin@example\.com \/ (\S+)/.exec(output)?.[1];
  const clientId = /client_id:\s+(\S+)/.exec(output)?.[1];
  const clientSecret = /client_secret:\s+(\S+)/.exec(output)?.[1];
  if (!password || !clientId || !clientSecret) throw new Error(`no demo data in output:\n${output}`);
  return { password, clientId, clientSecret };
}

const cookieOf = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith(`${name}=`));

/** An answer that is not the flow's: what the load loop records. */
interface Failure {
  status: number;
  contentType: string;
  body: string;
}

class Unexpected extends Error {
  constructor(readonly failure: Failure) {
    super(`${failure.status} ${failure.body.slice(0, 200)}`);
  }
}

async function expectStatus(res: Response, status: number): Promise<Response> {
  if (res.status !== status) {
    throw new Unexpected({ status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() });
  }
  return res;
}

/** One browser with a login session and the demo client: code flow, refresh rotation, an order, as one loop step. */
class Driver {
  private session = '';
  constructor(
    private readonly baseUrl: string,
    private readonly demo: Demo,
  ) {}

  private get basic(): string {
    return `Basic ${Buffer.from(`${encodeURIComponent(this.demo.clientId)}:${encodeURIComponent(this.demo.clientSecret)}`).toString('base64')}`;
  }

  async login(): Promise<void> {
    const form = await expectStatus(await fetch(`${this.baseUrl}/login?return_to=%2F`, { redirect: 'manual' }), 200);
    const html = await form.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1];
    const res = await fetch(`${this.baseUrl}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: [cookieOf(form, 'login_csrf'), this.session].filter(Boolean).join('; '),
      },
      body: new URLSearchParams({ email: 'admin@example.com', password: this.demo.password, csrf, return_to: '/' }),
    });
    await expectStatus(res, 303);
    this.session = cookieOf(res, 'oauth_session') ?? this.session;
  }

  private async token(form: Record<string, string>): Promise<{ access_token: string; refresh_token: string }> {
    const res = await fetch(`${this.baseUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: this.basic },
      body: new URLSearchParams(form),
    });
    return (await (await expectStatus(res, 200)).json()) as { access_token: string; refresh_token: string };
  }

  async step(): Promise<void> {
    // A login in a browser that has a session is a reauthentication (one transaction with its audit event).
    await this.login();
    const verifier = randomBytes(32).toString('base64url');
    const redirectUri = `${this.baseUrl}/demo/callback`;
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: this.demo.clientId,
      redirect_uri: redirectUri,
      scope: 'users:read orders:read orders:write',
      state: 'st',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const authorize = await fetch(`${this.baseUrl}/authorize?${query}`, { redirect: 'manual', headers: { cookie: this.session } });
    await expectStatus(authorize, 302);
    const code = new URL(authorize.headers.get('location')!).searchParams.get('code');
    if (!code) {
      this.session = '';
      throw new Error(`no code: ${authorize.headers.get('location')}`);
    }
    const tokens = await this.token({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
    const rotated = await this.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    const sub = JSON.parse(Buffer.from(rotated.access_token.split('.')[1], 'base64url').toString()).sub as string;
    const order = await fetch(`${this.baseUrl}/users/${sub}/orders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rotated.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify(orderBody({ item: 'restart' })),
    });
    await expectStatus(order, 201);
  }
}

describe('a PostgreSQL restart under load', () => {
  let pg: ThrowawayPostgres;
  let service: RunningService;
  let demo: Demo;

  beforeAll(async () => {
    buildOnce();
    pg = new ThrowawayPostgres(await freePort());
    pg.init();
    pg.start();
    service = await startService({ DATABASE_URL: pg.url, RATE_LIMIT_LOGIN: '100000', RATE_LIMIT_TOKEN: '100000', LOG_LEVEL: 'warn' });
    demo = demoFrom(service.output());
  }, 120_000);
  afterAll(async () => {
    service?.child.kill('SIGTERM');
    await service?.exit;
    pg?.destroy();
  });

  it('keeps the process up through terminated backends and restarts, answering 503 meanwhile and serving again', async () => {
    const failures: Failure[] = [];
    let completed = 0;
    let stop = false;
    const loop = async () => {
      const driver = new Driver(service.baseUrl, demo);
      while (!stop && service.child.exitCode === null) {
        try {
          await driver.step();
          completed++;
        } catch (error) {
          if (error instanceof Unexpected) failures.push(error.failure);
          else if (service.child.exitCode === null && !stop) failures.push({ status: 0, contentType: '', body: String(error) });
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const loops = Array.from({ length: 6 }, loop);
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const psql = (sql: string) => execFileSync('psql', [pg.url, '-Atc', sql], { stdio: 'pipe' });

    try {
      for (let waited = 0; completed < 10 && waited < 15_000; waited += 100) await wait(100);
      expect(completed, JSON.stringify(failures.slice(0, 3))).toBeGreaterThanOrEqual(10);
      for (let round = 0; round < 3; round++) {
        // Every backend but this one is killed (57P01), the connections in use included; then a fast restart.
        for (let kill = 0; kill < 10; kill++) {
          psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'");
          await wait(100);
        }
        pg.stop();
        await wait(500);
        pg.start();
        // Serving again within seconds: a whole flow step completes after the restart.
        const before = completed;
        const back = Date.now();
        while (completed === before && Date.now() - back < 10_000) await wait(100);
        expect(service.child.exitCode, service.output().slice(-3000)).toBeNull();
        expect(completed, `no flow completed within 10 s of restart ${round + 1}`).toBeGreaterThan(before);
      }
    } finally {
      stop = true;
      await Promise.all(loops);
    }

    expect(service.child.exitCode, service.output().slice(-3000)).toBeNull();
    expect(service.output()).not.toMatch(/Unhandled 'error' event|uncaughtException|unhandledRejection/);
    // What the clients saw while the database was gone: 503s, each a problem document or an OAuth error.
    for (const failure of failures) {
      expect(failure.status, failure.body).toBe(503);
      if (failure.contentType.startsWith('application/problem+json')) {
        expect(JSON.parse(failure.body)).toMatchObject({ status: 503, title: 'Service Unavailable' });
      } else {
        expect(failure.contentType).toMatch(/^application\/json/);
        expect(JSON.parse(failure.body)).toMatchObject({ error: 'temporarily_unavailable' });
      }
    }
    const health = await fetch(`${service.baseUrl}/health/ready`);
    expect(health.status).toBe(200);
  }, 120_000);
});
