import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Driver, type Demo, type Failure, Unexpected, demoFrom } from '../support/live-service';
import { type RunningService, buildOnce, startService } from '../support/service-process';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/**
 * The built service under a mixed OAuth load (code flows, refresh rotations, order writes) while its PostgreSQL
 * server terminates every backend and then restarts: the process lives through it, answers 503 problem+json (or
 * the token endpoint's `temporarily_unavailable`) while the database is gone, and serves again within seconds.
 */

describe('a PostgreSQL restart under load', () => {
  let pg: ThrowawayPostgres;
  let service: RunningService;
  let demo: Demo;

  beforeAll(async () => {
    buildOnce();
    pg = await ThrowawayPostgres.launch();
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
