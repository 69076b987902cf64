import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, issueTokens, login, registerClient, token } from '../support/oauth';
import { expectProblem } from '../support/problem';
import { type TestApp, type TestDatabase, bearer, createTestApp, createTestDatabase } from '../support/test-app';

/** POST /login attempts per minute here: the code flow and the failed login fit in, a few more reach the 429. */
const LOGIN_BUDGET = 4;
const METRICS_TOKEN = 'metrics-token-0123456789abcdef0123456789';

type Labels = Record<string, string>;

/** The samples of a Prometheus text exposition: name, labels and value of every line that is not a comment. */
function samples(text: string): { name: string; labels: Labels; value: number }[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The value of the sample `name` with exactly `labels` (0 when there is none yet). */
function valueOf(text: string, name: string, labels: Labels = {}): number {
  const found = samples(text).filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  expect(found.length, `${name} ${JSON.stringify(labels)}`).toBeLessThanOrEqual(1);
  return found[0]?.value ?? 0;
}

async function scrape(t: TestApp): Promise<string> {
  const res = await t.http().get('/metrics');
  expect(res.status, res.text).toBe(200);
  return res.text;
}

describe('GET /metrics (Prometheus)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_LOGIN: String(LOGIN_BUDGET), RATE_LIMIT_TOKEN: '100000' });
  });
  afterAll(() => t.close());

  it('serves the text format to a loopback client by default, with the process metrics', async () => {
    const res = await t.http().get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    for (const name of ['process_cpu_user_seconds_total', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(res.text).toContain(`\n${name} `);
    }
  });

  it('counts issued tokens by grant, refresh-token reuse, failed logins and rate-limit refusals', async () => {
    const before = await scrape(t);

    // One code flow (a successful login, a code redeemed), one refresh, the rotated token presented again.
    const flow = await issueTokens(t);
    const refreshed = await token(t, flow.client, { grant_type: 'refresh_token', refresh_token: flow.refresh });
    expect(refreshed.status).toBe(200);
    const reused = await token(t, flow.client, { grant_type: 'refresh_token', refresh_token: flow.refresh });
    expect(reused.status).toBe(400);
    // One client-credentials token, and a refused one (not allowed the grant), which issues nothing.
    const service = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read' });
    expect((await token(t, service, { grant_type: 'client_credentials' })).status).toBe(200);
    expect((await token(t, flow.client, { grant_type: 'client_credentials' })).status).toBe(400);
    // One wrong password.
    const failed = await login(new Browser(t), (await t.createUser()).email, 'not the password at all');
    expect(failed.status).toBe(401);
    // Login attempts (without a form token: 403, not a failed login) until the budget is spent: exactly one 429.
    const statuses: number[] = [];
    while (!statuses.includes(429) && statuses.length <= LOGIN_BUDGET)
      statuses.push((await t.http().post('/login').type('form').send('email=x')).status);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 403)).toBe(true);

    const after = await scrape(t);
    const increase = (name: string, labels?: Labels) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(increase('oauth_tokens_issued_total', { grant_type: 'authorization_code' })).toBe(1);
    expect(increase('oauth_tokens_issued_total', { grant_type: 'refresh_token' })).toBe(1);
    expect(increase('oauth_tokens_issued_total', { grant_type: 'client_credentials' })).toBe(1);
    expect(increase('oauth_refresh_token_reuse_total')).toBe(1);
    expect(increase('login_failures_total')).toBe(1);
    expect(increase('rate_limit_refusals_total', { bucket: 'login' })).toBe(1);
    expect(increase('rate_limit_refusals_total', { bucket: 'token' })).toBe(0);
    expect(increase('rate_limit_refusals_total', { bucket: 'register' })).toBe(0);
    const tokenRequests = { method: 'POST', route: '/token', status: '200' };
    expect(increase('http_requests_total', tokenRequests)).toBe(3);
    expect(increase('http_request_duration_seconds_count', tokenRequests)).toBe(3);
    expect(increase('http_requests_total', { method: 'POST', route: '/login', status: '429' })).toBe(1);
  });

  it('labels requests with the route template, never the path, and requests no route took as unmatched', async () => {
    const user = await t.createUser();
    const unknown = randomUUID();
    const before = await scrape(t);
    expect(
      (
        await t
          .http()
          .get(`/users/${user.id}`)
          .set(...bearer(await t.token(user.id, ['users:read'])))
      ).status,
    ).toBe(200);
    expect((await t.http().get(`/no/such/route/${unknown}`)).status).toBe(404);
    const after = await scrape(t);

    const route = { method: 'GET', route: '/users/:userId', status: '200' };
    expect(valueOf(after, 'http_requests_total', route) - valueOf(before, 'http_requests_total', route)).toBe(1);
    expect(
      valueOf(after, 'http_request_duration_seconds_count', route) - valueOf(before, 'http_request_duration_seconds_count', route),
    ).toBe(1);
    expect(valueOf(after, 'http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).toBe(
      valueOf(after, 'http_requests_total', route),
    );
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    expect(valueOf(after, 'http_requests_total', unmatched) - valueOf(before, 'http_requests_total', unmatched)).toBe(1);
    expect(after).not.toContain(user.id);
    expect(after).not.toContain(unknown);
    // Every route label is a template or "unmatched": no raw path with an id in it.
    const routes = new Set(samples(after).flatMap((s) => (s.labels.route === undefined ? [] : [s.labels.route])));
    expect([...routes].filter((r) => r !== 'unmatched' && !r.startsWith('/'))).toEqual([]);
  });

  it('shows the PostgreSQL pool, and nothing of a pool on SQLite (which has none)', async () => {
    const text = await scrape(t);
    const pool = samples(text).filter((s) => s.name.startsWith('db_pool_'));
    if (t.config.database.kind === 'postgres') {
      expect(pool.map((s) => s.name).sort()).toEqual(['db_pool_connections', 'db_pool_idle_connections', 'db_pool_waiting_requests']);
      expect(valueOf(text, 'db_pool_connections')).toBeGreaterThanOrEqual(1);
      expect(valueOf(text, 'db_pool_idle_connections')).toBeLessThanOrEqual(valueOf(text, 'db_pool_connections'));
    } else {
      expect(pool).toEqual([]);
    }
  });

  it('refuses a request a proxy forwarded while TRUST_PROXY is off: its real client is unknown', async () => {
    expectProblem(await t.http().get('/metrics').set('X-Forwarded-For', '127.0.0.1'), 403, '/metrics');
  });
});

describe('GET /metrics access', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  /** An app on the suite's one database, closed (and its documented statuses checked) after `run`. */
  async function withApp(env: Record<string, string>, run: (t: TestApp) => Promise<void>): Promise<void> {
    const t = await createTestApp(env, db);
    try {
      await run(t);
    } finally {
      await t.close();
    }
  }

  it('answers 403 to an address outside METRICS_ALLOW without the token, 200 with it, 403 with another', async () => {
    // 192.0.2.0/24 is reserved for documentation: never the test client's address.
    await withApp({ METRICS_ALLOW: '192.0.2.0/24', METRICS_TOKEN }, async (t) => {
      expectProblem(await t.http().get('/metrics'), 403, '/metrics');
      const ok = await t
        .http()
        .get('/metrics')
        .set(...bearer(METRICS_TOKEN));
      expect(ok.status).toBe(200);
      expect(ok.text).toContain('# TYPE http_requests_total counter');
      expect(ok.text).not.toContain(METRICS_TOKEN);
      // The scheme name is case-insensitive (RFC 6750), the token is not.
      expect((await t.http().get('/metrics').set('Authorization', `bearer ${METRICS_TOKEN}`)).status).toBe(200);
      for (const authorization of [
        `Bearer ${METRICS_TOKEN.toUpperCase()}`,
        `Bearer ${METRICS_TOKEN}x`,
        'Bearer short',
        `Basic ${METRICS_TOKEN}`,
        'Bearer',
      ]) {
        expectProblem(await t.http().get('/metrics').set('Authorization', authorization), 403, '/metrics');
      }
      // An access token of the API is not the metrics token.
      expectProblem(
        await t
          .http()
          .get('/metrics')
          .set(...bearer(await t.token(randomUUID()))),
        403,
        '/metrics',
      );
    });
  });

  it('judges a request that sends a token by the token alone, also from an allowed address', async () => {
    await withApp({ METRICS_TOKEN }, async (t) => {
      expect((await t.http().get('/metrics')).status).toBe(200);
      expect(
        (
          await t
            .http()
            .get('/metrics')
            .set(...bearer(METRICS_TOKEN))
        ).status,
      ).toBe(200);
      expectProblem(
        await t
          .http()
          .get('/metrics')
          .set(...bearer(`${METRICS_TOKEN}x`)),
        403,
        '/metrics',
      );
    });
  });

  it('lets nobody in without the token with METRICS_ALLOW=none, and nobody at all when no token is set either', async () => {
    await withApp({ METRICS_ALLOW: 'none' }, async (t) => {
      expectProblem(await t.http().get('/metrics'), 403, '/metrics');
      expectProblem(
        await t
          .http()
          .get('/metrics')
          .set(...bearer(METRICS_TOKEN)),
        403,
        '/metrics',
      );
    });
  });

  it('with TRUST_PROXY, checks the address the nearest proxy saw (the last X-Forwarded-For entry), not a forgeable first one', async () => {
    await withApp({ TRUST_PROXY: 'true', METRICS_ALLOW: '192.0.2.0/24' }, async (t) => {
      expect((await t.http().get('/metrics').set('X-Forwarded-For', '192.0.2.10')).status).toBe(200);
      expect((await t.http().get('/metrics').set('X-Forwarded-For', '198.51.100.7, 192.0.2.10')).status).toBe(200);
      expectProblem(await t.http().get('/metrics').set('X-Forwarded-For', '192.0.2.10, 198.51.100.7'), 403, '/metrics');
      // Not forwarded at all: the peer (loopback here) is not on this list.
      expectProblem(await t.http().get('/metrics'), 403, '/metrics');
    });
  });

  it('answers 404 with METRICS=off, to everyone', async () => {
    await withApp({ METRICS: 'off', METRICS_TOKEN }, async (t) => {
      expectProblem(await t.http().get('/metrics'), 404, '/metrics');
      expectProblem(
        await t
          .http()
          .get('/metrics')
          .set(...bearer(METRICS_TOKEN)),
        404,
        '/metrics',
      );
    });
  });

  it('refuses query parameters (400) once the caller is let in', async () => {
    await withApp({}, async (t) => {
      expectProblem(await t.http().get('/metrics?name=http_requests_total'), 400, '/metrics', { errors: true });
    });
  });
});
