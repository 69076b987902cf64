import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onServerPort } from '../support/service-process';
import { type TestApp, createTestApp } from '../support/test-app';

const LOGIN_LIMIT = 3;

/** A Redis server of this suite's own, so that it can be paused and killed; ready once it says so itself. */
async function startRedis(port: number): Promise<{ server: ChildProcess; port: number }> {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  server.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  for (let attempt = 0; !out.includes('Ready to accept connections'); attempt++) {
    if (attempt > 100 || server.exitCode !== null) {
      server.kill('SIGKILL');
      throw new Error(`redis-server did not start on port ${port}:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { server, port };
}

describe('rate limits when Redis hangs or dies (REDIS_URL)', () => {
  let redis: ChildProcess;
  let t: TestApp;

  beforeAll(async () => {
    const started = await onServerPort(startRedis);
    redis = started.server;
    t = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${started.port}`, RATE_LIMIT_LOGIN: String(LOGIN_LIMIT) });
  });
  afterAll(async () => {
    redis.kill('SIGCONT');
    redis.kill('SIGKILL');
    await t.close();
  });

  /** A rate-limited request (an unknown client at /token: 401 once counted) and how long it took. */
  async function timedToken(): Promise<{ status: number; ms: number }> {
    const started = Date.now();
    const res = await t.http().post('/token').type('form').send({ grant_type: 'authorization_code', code: 'x', client_id: 'nobody' });
    return { status: res.status, ms: Date.now() - started };
  }

  function loginAttempt() {
    return t.http().post('/login').type('form').send({ email: 'x@example.com', password: 'whatever-password', csrf: 'x' });
  }

  async function readiness() {
    const started = Date.now();
    const res = await t.http().get('/health/ready');
    return { status: res.status, redis: res.body.details?.redis, ms: Date.now() - started };
  }

  it('reports Redis up in readiness while it answers', async () => {
    const ready = await readiness();
    expect(ready.status).toBe(200);
    expect(ready.redis).toEqual({ status: 'up' });
    expect((await timedToken()).status).toBe(401);
  });

  it('a paused Redis (accepts connections, never answers) holds no request up, and the limits still hold', async () => {
    redis.kill('SIGSTOP');
    try {
      const first = await timedToken();
      expect(first.status).toBe(401);
      expect(first.ms).toBeLessThan(1000);
      for (let i = 0; i < 5; i++) expect((await timedToken()).ms).toBeLessThan(500);

      const ready = await readiness();
      expect(ready.status).toBe(200);
      expect(ready.redis.status).toBe('degraded');
      expect(ready.redis.message).toMatch(/per instance/);
      expect(ready.ms).toBeLessThan(1000);

      // Counted in this instance meanwhile: the login budget still runs out.
      const statuses: number[] = [];
      for (let i = 0; i <= LOGIN_LIMIT; i++) statuses.push((await loginAttempt()).status);
      expect(statuses).toEqual([...Array<number>(LOGIN_LIMIT).fill(403), 429]);
    } finally {
      redis.kill('SIGCONT');
    }
    // Once it answers again, readiness (which pings it) says so and the counters go back to Redis.
    expect((await readiness()).redis).toEqual({ status: 'up' });
  });

  it('a killed Redis holds no request up either, and readiness stays 200 with Redis degraded', async () => {
    const exited = new Promise((resolve) => redis.once('exit', resolve));
    redis.kill('SIGKILL');
    await exited;
    for (let i = 0; i < 5; i++) {
      const res = await timedToken();
      expect(res.status).toBe(401);
      expect(res.ms).toBeLessThan(1000);
    }
    const ready = await readiness();
    expect(ready.status).toBe(200);
    expect(ready.redis.status).toBe('degraded');
    expect(ready.ms).toBeLessThan(1000);
  });
});
