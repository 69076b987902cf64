import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { allScopes } from '../../src/auth/scopes';
import { configVariables } from '../../src/config/env';
import { NODE_FLAGS, ROOT } from '../support/service-process';
import { type TestApp, createTestApp, createTestDatabase } from '../support/test-app';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Every route Express has registered, as `METHOD /path/{param}`. */
function registeredRoutes(t: TestApp): string[] {
  const router = (
    t.app.getHttpAdapter().getInstance() as { router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] } }
  ).router;
  const out: string[] = [];
  for (const layer of router.stack) {
    if (!layer.route) continue;
    const path = layer.route.path.replace(/:(\w+)/g, '{$1}');
    if (path.startsWith('/docs') || path.includes('*')) continue; // the documentation itself, catch-all handlers
    for (const method of Object.keys(layer.route.methods)) if (method !== '_all') out.push(`${method.toUpperCase()} ${path}`);
  }
  return out;
}

describe('operations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers liveness and readiness with 200 while the database is up', async () => {
    const live = await t.http().get('/health/live');
    expect(live.status).toBe(200);
    expect(live.body.status).toBe('ok');
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', details: { database: { status: 'up' } } });
  });

  it('describes every registered route in the OpenAPI document, with the bearer and OAuth 2.0 schemes', async () => {
    const res = await t.http().get('/docs/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as {
      paths: Record<string, Record<string, { security?: object[] }>>;
      components: { securitySchemes: Record<string, { type: string; flows?: { authorizationCode?: { scopes: object } } }> };
    };
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)),
    );
    const routes = registeredRoutes(t);
    expect(routes.length).toBeGreaterThan(15);
    for (const route of routes) expect(documented, route).toContain(route);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    // Every scope the modules define, read from the registry: a new module's scopes are documented by themselves.
    expect(Object.keys(doc.components.securitySchemes.oauth2.flows!.authorizationCode!.scopes).sort()).toEqual([...allScopes()].sort());
    expect(allScopes()).toEqual(expect.arrayContaining(['orders:read', 'orders:write', 'users:read', 'users:write']));
    expect(doc.paths['/users'].get.security).toEqual(expect.arrayContaining([{ oauth2: ['users:read'] }]));
    const ui = await t.http().get('/docs/');
    expect(ui.status).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
  });

  it('sends helmet security headers on every response, errors included, and no CORS headers by default', async () => {
    for (const path of ['/health/live', '/api/resource', '/no/such/route']) {
      const res = await t.http().get(path).set('Origin', 'https://evil.example');
      expect(res.headers['x-content-type-options'], path).toBe('nosniff');
      expect(res.headers['x-frame-options'], path).toBeDefined();
      expect(res.headers['content-security-policy'], path).toBeDefined();
      expect(res.headers['x-request-id'], path).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers['access-control-allow-origin'], path).toBeUndefined();
      expect(res.headers['x-powered-by'], path).toBeUndefined();
    }
  });

  it('answers CORS only for the configured origins', async () => {
    const cors = await createTestApp({ CORS_ORIGINS: 'https://app.example.com' });
    try {
      const allowed = await cors.http().get('/health/live').set('Origin', 'https://app.example.com');
      expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example.com');
      const other = await cors.http().get('/health/live').set('Origin', 'https://evil.example');
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await cors.close();
    }
  });
});

describe('rate limits', () => {
  async function loginAttempt(t: TestApp, email: string) {
    return t.http().post('/login').type('form').send({ email, password: 'whatever-password', csrf: 'x', return_to: '/' });
  }

  it('limits POST /login per address with 429 and Retry-After, the same for known and unknown emails', async () => {
    const t = await createTestApp({ RATE_LIMIT_LOGIN: '3' });
    try {
      const user = await t.createUser();
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await loginAttempt(t, i % 2 ? user.email : 'nobody@example.com')).status);
      expect(statuses).toEqual([403, 403, 403]); // no CSRF cookie: refused, but counted
      const known = await loginAttempt(t, user.email);
      const unknown = await loginAttempt(t, 'nobody@example.com');
      for (const res of [known, unknown]) {
        expect(res.status).toBe(429);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
      expect(known.body).toEqual({ ...unknown.body, instance: '/login' });
      // Other routes are not limited.
      expect((await t.http().get('/login')).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('limits POST /token per client, whether or not the client exists', async () => {
    const t = await createTestApp({ RATE_LIMIT_TOKEN: '2' });
    try {
      const send = (clientId: string) =>
        t.http().post('/token').type('form').send({ grant_type: 'authorization_code', code: 'x', client_id: clientId });
      expect((await send('ghost-client')).status).toBe(401);
      expect((await send('ghost-client')).status).toBe(401);
      const limited = await send('ghost-client');
      expect(limited.status).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      await t.close();
    }
  });

  it('shares counters between instances through Redis when REDIS_URL is set', async () => {
    // Behind a "proxy" that names an address of this run's own: another test run on the same Redis (a second
    // clone's) counts other keys, and only this run's are removed afterwards.
    const address = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
    const redis = new Redis(REDIS_URL);
    const ours = async () => (await redis.keys('rl:*')).filter((key) => key.endsWith(`ip:${address}`));
    const db = await createTestDatabase();
    const env = { REDIS_URL, RATE_LIMIT_LOGIN: '2', TRUST_PROXY: 'true' };
    const a = await createTestApp(env, db);
    const b = await createTestApp(env, db);
    const attempt = (t: TestApp) =>
      t
        .http()
        .post('/login')
        .set('X-Forwarded-For', address)
        .type('form')
        .send({ email: 'x@example.com', password: 'whatever-password', csrf: 'x', return_to: '/' });
    try {
      expect((await attempt(a)).status).toBe(403);
      expect((await attempt(b)).status).toBe(403);
      const third = await attempt(a);
      expect(third.status).toBe(429);
      expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect((await ours()).filter((key) => key.startsWith('rl:login')).length).toBeGreaterThan(0);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
      const left = await ours();
      if (left.length) await redis.del(...left);
      redis.disconnect();
    }
  });
});

describe('containers and configuration files', () => {
  it('names in docker-compose.yml only variables the configuration knows', () => {
    const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, { environment?: Record<string, string>; healthcheck?: object; build?: unknown }>;
      volumes: Record<string, unknown>;
    };
    const app = compose.services.app;
    expect(app.build).toBeDefined();
    expect(app.healthcheck).toBeDefined();
    const names = Object.keys(app.environment ?? {});
    expect(names.length).toBeGreaterThan(3);
    for (const name of names) expect(configVariables(), name).toContain(name);
    expect(app.environment!.DATABASE_URL).toMatch(/^postgres:\/\//);
    expect(app.environment!.REDIS_URL).toMatch(/^redis:\/\//);
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'postgres', 'redis']);
    expect(Object.keys(compose.volumes)).toHaveLength(1);
  });

  it('documents every configuration variable in .env.example and nothing else', () => {
    const names = readFileSync(join(ROOT, '.env.example'), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.slice(0, l.indexOf('=')));
    expect([...names].sort()).toEqual(configVariables().sort());
  });

  it('builds the image as a non-root user with production dependencies only', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/npm prune --omit=dev|npm ci --omit=dev/);
  });

  it('runs the image with the memory settings of npm start (package.json "config")', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      config: { nodeOptions: string; mallocArenaMax: string; mallocMmapThreshold: string };
      scripts: Record<string, string>;
    };
    expect(pkg.config.nodeOptions).toMatch(/--max-old-space-size=\d+/);
    expect(pkg.config.nodeOptions).toMatch(/--max-semi-space-size=\d+/);
    for (const script of ['start', 'start:prod']) {
      expect(pkg.scripts[script]).toContain('NODE_OPTIONS="$npm_package_config_nodeOptions $NODE_OPTIONS"');
      expect(pkg.scripts[script]).toContain('MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-$npm_package_config_mallocArenaMax}');
      expect(pkg.scripts[script]).toContain('MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-$npm_package_config_mallocMmapThreshold}');
    }
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain(`NODE_OPTIONS="${pkg.config.nodeOptions}"`);
    expect(dockerfile).toContain(`MALLOC_ARENA_MAX=${pkg.config.mallocArenaMax}`);
    expect(dockerfile).toContain(`MALLOC_MMAP_THRESHOLD_=${pkg.config.mallocMmapThreshold}`);
  });

  it('runs the server, the image and the tests with the same V8 flags on the node command line (config.nodeFlags)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(NODE_FLAGS).toContain('--no-allocation-site-pretenuring');
    expect(NODE_FLAGS).toContain('--no-memory-reducer');
    for (const script of ['start', 'start:prod'])
      expect(pkg.scripts[script]).toContain('node $npm_package_config_nodeFlags dist/src/main.js');
    const command = /^CMD (\[.*\])$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1];
    expect(JSON.parse(command)).toEqual(['node', ...NODE_FLAGS, 'dist/src/main.js']);
    // This test's own worker, as every worker of the suite.
    expect(process.execArgv).toEqual(expect.arrayContaining(NODE_FLAGS));
  });
});
