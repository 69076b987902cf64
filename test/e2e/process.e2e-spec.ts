import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeRole } from '../../src/auth/scopes';
import { codeFlow, demoFrom } from '../support/live-service';
import { CLI, ROOT, type RunningService, buildOnce, runToExit, startService, tempSqliteUrl } from '../support/service-process';
import { ALL_SCOPES } from '../support/test-app';

/** The built service as an operator runs it: logs, shutdown, configuration errors and the CLI. */

/** What a service wrote after its start: the demo credentials are printed there once, on purpose; every log line after it must be clean. */
function logsAfterBanner(output: string): string {
  const logs = output.slice(output.indexOf('ready: listening on'));
  return logs.slice(logs.indexOf('\n') + 1);
}

describe('the built service', () => {
  beforeAll(() => buildOnce());

  describe('logs and shutdown', () => {
    let svc: RunningService;
    const db = tempSqliteUrl();

    beforeAll(async () => {
      svc = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'info' });
    });
    afterAll(async () => {
      if (svc.child.exitCode === null) {
        svc.child.kill('SIGKILL');
        await svc.exit;
      }
      db.remove();
    });

    it('writes one JSON line per request and never a password, secret, code, cookie or token', async () => {
      const demo = demoFrom(svc.output());
      const flow = await codeFlow(svc.baseUrl, demo);
      // The demo client is not trusted: a newcomer's first flow shows the consent page, the next one remembers it.
      expect(flow.consentShown).toBe(true);
      expect((await codeFlow(svc.baseUrl, demo)).consentShown).toBe(false);
      // A request's line is written when its response has finished; give the last one a moment.
      for (let i = 0; i < 40 && !svc.output().includes('"path":"/api/resource"'); i++) await new Promise((r) => setTimeout(r, 50));
      const afterBanner = logsAfterBanner(svc.output());
      for (const secret of flow.secrets) expect(afterBanner).not.toContain(secret);
      // Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: no trace fields (see tracing.e2e-spec.ts).
      expect(afterBanner).not.toContain('trace_id');

      const lines = afterBanner
        .split('\n')
        .filter((l) => l.includes('"request completed"'))
        .map((l) => JSON.parse(l));
      const tokenLine = lines.find((l) => l.req.path === '/token');
      expect(tokenLine).toMatchObject({ req: { method: 'POST', path: '/token' }, route: '/token', res: { statusCode: 200 } });
      expect(typeof tokenLine.req.id).toBe('string');
      expect(typeof tokenLine.responseTime).toBe('number');
      const apiLine = lines.find((l) => l.req.path === '/api/resource');
      expect(apiLine).toMatchObject({ route: '/api/resource', res: { statusCode: 200 } });
    });

    it('finishes a request in flight on SIGTERM, keeps what it acknowledged, and exits 0', async () => {
      const demo = demoFrom(svc.output());
      const flow = await codeFlow(svc.baseUrl, demo);
      const userId = await flow.userIdFrom();
      const body = JSON.stringify({ item: 'Slow widget', quantity: 2, unitPriceCents: 150, currency: 'EUR' });
      const url = new URL(`${svc.baseUrl}/users/${userId}/orders`);
      const response = new Promise<{ status: number; body: string }>((resolveRes, reject) => {
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            headers: {
              authorization: `Bearer ${flow.accessToken}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString()));
            res.on('end', () => resolveRes({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on('error', reject);
        // Half the body now, SIGTERM, the rest later: the request is in flight when the signal arrives.
        req.write(body.slice(0, 10));
        setTimeout(() => {
          svc.child.kill('SIGTERM');
          setTimeout(() => req.end(body.slice(10)), 400);
        }, 200);
      });
      const answered = await response;
      expect(answered.status).toBe(201);
      expect(JSON.parse(answered.body)).toMatchObject({ item: 'Slow widget', totalCents: 300, status: 'pending' });
      expect(await svc.exit).toBe(0);
      // The lines written in the last turns before the exit reached the pipe: the signal's and the order's.
      const lines = logsAfterBanner(svc.output()).split('\n');
      expect(lines.some((l) => l.includes('SIGTERM received, shutting down'))).toBe(true);
      const orderLine = lines
        .filter((l) => l.includes('"request completed"'))
        .map((l) => JSON.parse(l))
        .find((l) => l.req.method === 'POST' && l.route === '/users/:userId/orders');
      expect(orderLine).toMatchObject({ res: { statusCode: 201 } });

      // Restarted on the same database: the acknowledged order is there.
      const again = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
      try {
        const orderId = JSON.parse(answered.body).id as string;
        const res = await fetch(`${again.baseUrl}/health/ready`);
        expect(res.status).toBe(200);
        const { status } = runToExit({ DATABASE_URL: db.url }, [CLI, 'keys:rotate']);
        expect(status).toBe(0);
        expect(orderId).toMatch(/^[0-9a-f-]{36}$/);
        const count = runToExit({ DATABASE_URL: db.url }, [
          '-e',
          `const D=require('better-sqlite3');const db=new D(${JSON.stringify(db.url.slice(7))});` +
            `process.stdout.write(String(db.prepare('select count(*) c from orders where id=?').get(${JSON.stringify(orderId)}).c))`,
        ]);
        expect(count.output).toBe('1');
      } finally {
        again.child.kill('SIGTERM');
        expect(await again.exit).toBe(0);
      }
    }, 180_000);
  });

  it('writes human-readable lines with LOG_FORMAT=pretty, and never a token there either', async () => {
    const db = tempSqliteUrl();
    const svc = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' });
    try {
      const demo = demoFrom(svc.output());
      const flow = await codeFlow(svc.baseUrl, demo);
      for (let i = 0; i < 40 && !svc.output().includes('/api/resource'); i++) await new Promise((r) => setTimeout(r, 50));
      const afterBanner = logsAfterBanner(svc.output());
      for (const secret of flow.secrets) expect(afterBanner).not.toContain(secret);
      const completed = afterBanner.split('\n').filter((l) => l.includes('request completed'));
      expect(completed.length).toBeGreaterThan(0);
      for (const line of completed) {
        expect(line.startsWith('{')).toBe(false);
        expect(line).toMatch(/INFO/);
      }
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exit;
      db.remove();
    }
  });

  it('opens its port, then shows the demo block and ends its start with one ready line naming the issuer (from PORT when ISSUER is unset)', async () => {
    const db = tempSqliteUrl();
    const svc = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'info', ISSUER: '' });
    const port = new URL(svc.baseUrl).port;
    try {
      const issuer = `http://localhost:${port}`;
      const lines = svc.output().trimEnd().split('\n');
      expect(lines.at(-1)).toBe(`ready: listening on http://127.0.0.1:${port}, issuer ${issuer}`);
      const block = lines.slice(lines.indexOf('Demo data created (shown only once):'), -1);
      expect(block[0]).toBe('Demo data created (shown only once):');
      const demo = demoFrom(block.join('\n'));
      expect(block).toContain(
        `     CLIENT_ID=${demo.clientId} CLIENT_SECRET=${demo.clientSecret} CODE_VERIFIER=${/CODE_VERIFIER=([\w-]{43})$/m.exec(block.join('\n'))![1]}`,
      );
      expect(block).toContain(
        `     TOKENS=$(curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=authorization_code -d code=CODE -d code_verifier="$CODE_VERIFIER" -d redirect_uri=${issuer}/demo/callback ${issuer}/token); echo "$TOKENS"; ACCESS_TOKEN=$(echo "$TOKENS" | jq -r .access_token)`,
      );
      const url = new URL(block[block.indexOf('  2. open in a browser, sign in as the admin and allow the demo client:') + 1].trim());
      expect(url.origin).toBe(issuer);
      expect(url.searchParams.get('redirect_uri')).toBe(`${issuer}/demo/callback`);
      // Nest's route and module inventory is debug detail, not info.
      expect(svc.output()).not.toMatch(/Mapped \{|RoutesResolver|InstanceLoader/);
      const discovery = (await (await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`)).json()) as {
        issuer: string;
      };
      expect(discovery.issuer).toBe(issuer);

      // A later start on the same database shows no block: one line says how to set the demo admin's password.
      svc.child.kill('SIGTERM');
      await svc.exit;
      const again = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'info', ISSUER: '' }, Number(port));
      const started = again.output();
      again.child.kill('SIGTERM');
      await again.exit;
      const tail = started.trimEnd().split('\n').slice(-2);
      const command = "npm run cli -- user:set-password --email admin@example.com --password '<12 or more characters>'";
      expect(tail).toEqual([
        `demo admin: admin@example.com (its password was shown once); a new one: ${command}`,
        `ready: listening on http://127.0.0.1:${port}, issuer ${issuer}`,
      ]);
      expect(started).not.toContain('Demo data created');
      // The command it names works (npm run cli runs the built cli.js).
      const reset = runToExit({ DATABASE_URL: db.url }, [
        CLI,
        'user:set-password',
        '--email',
        'admin@example.com',
        '--password',
        'a-new-demo-password',
      ]);
      expect(reset.status).toBe(0);
    } finally {
      svc.child.kill('SIGTERM');
      await svc.exit;
      db.remove();
    }
  });

  it('answers readiness 503 from SIGTERM while it drains (SHUTDOWN_DRAIN_SECONDS), still serving, then exits 0', async () => {
    const db = tempSqliteUrl();
    const svc = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', SHUTDOWN_DRAIN_SECONDS: '3' });
    try {
      const before = await fetch(`${svc.baseUrl}/health/ready`);
      expect(before.status).toBe(200);
      expect(await before.json()).toMatchObject({ status: 'ok', info: { shutdown: { status: 'up' }, database: { status: 'up' } } });

      const signalled = Date.now();
      svc.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      const draining = await fetch(`${svc.baseUrl}/health/ready`);
      expect(draining.status).toBe(503);
      expect(draining.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await draining.json()).toEqual({
        type: 'about:blank',
        title: 'Service Unavailable',
        status: 503,
        detail: 'The service is temporarily unavailable.',
        instance: '/health/ready',
      });
      // Everything else is still served while the load balancer notices.
      const live = await fetch(`${svc.baseUrl}/health/live`);
      expect(live.status).toBe(200);
      const metadata = await fetch(`${svc.baseUrl}/.well-known/oauth-authorization-server`);
      expect(metadata.status).toBe(200);

      expect(await svc.exit).toBe(0);
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(3_000);
    } finally {
      if (svc.child.exitCode === null) svc.child.kill('SIGKILL');
      db.remove();
    }
  });

  describe('configuration', () => {
    it.each([
      [{ ACCESS_TOKEN_TTL: '60s' }, 'ACCESS_TOKEN_TTL'],
      [{ DATABASE_URL: 'mysql://localhost/app' }, 'DATABASE_URL'],
      [{ PORT: 'eighty' }, 'PORT'],
      [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
      [{ NODE_ENV: 'production', ISSUER: 'https://auth.example.com' }, 'DATABASE_URL'],
      [{ NODE_ENV: 'production', DATABASE_URL: 'postgres://u@127.0.0.1:1/x', ISSUER: 'http://auth.example.com' }, 'ISSUER'],
    ])('refuses to start with %o and names %s in one line', (env, variable) => {
      const { status, output } = runToExit({ DATABASE_URL: 'sqlite::memory:', ...env });
      expect(status).not.toBe(0);
      const lines = output.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(variable);
    });

    it('stops in one line naming DATABASE_URL without its password, and why, when the database cannot be reached', () => {
      const { status, output } = runToExit({ DATABASE_URL: 'postgres://app:s3cret-pw@127.0.0.1:1/app' });
      expect(status).toBe(1);
      expect(output.trim().split('\n')).toEqual([
        'failed to start: the database at DATABASE_URL postgres://app@127.0.0.1:1/app could not be reached: connect ECONNREFUSED 127.0.0.1:1',
      ]);
    });

    it('names every bad variable, of every module and several of one module, in that one line', () => {
      const env = {
        DATABASE_URL: 'sqlite::memory:',
        PORT: 'eighty',
        LOG_LEVEL: 'loud',
        LOG_FORMAT: 'fancy',
        REVOCATION_SYNC_SECONDS: 'soon',
        AUDIT_RETENTION_DAYS: 'forever',
      };
      const { status, output } = runToExit(env);
      expect(status).toBe(1);
      const lines = output.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^configuration error: /);
      const named = lines[0]
        .slice('configuration error: '.length)
        .split('; ')
        .map((problem) => problem.split(' ')[0]);
      expect(named.sort()).toEqual(['AUDIT_RETENTION_DAYS', 'LOG_FORMAT', 'LOG_LEVEL', 'PORT', 'REVOCATION_SYNC_SECONDS']);
    });
  });

  describe('command line', () => {
    const db = tempSqliteUrl();
    afterAll(() => db.remove());

    it('creates a user and prints it as one JSON object without the password', () => {
      const { status, output } = runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [
        CLI,
        'user:create',
        '--email',
        'Cli.User@example.com',
        '--password',
        'a long enough password',
        '--name',
        'Cli User',
        '--gender',
        'other',
        '--age',
        '41',
        '--role',
        'admin',
      ]);
      expect(status).toBe(0);
      const user = JSON.parse(output);
      expect(user).toMatchObject({ email: 'Cli.User@example.com', name: 'Cli User', gender: 'other', age: 41, role: 'admin' });
      expect(Object.keys(user).sort()).toEqual(['age', 'createdAt', 'email', 'gender', 'id', 'name', 'role', 'updatedAt']);
    });

    it('lists users and clients as JSON pages, and resets a password so that only the new one verifies', () => {
      const env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
      const users = runToExit(env, [CLI, 'user:list', '--sort', 'email', '--limit', '5']);
      expect(users.status).toBe(0);
      const page = JSON.parse(users.output);
      expect(page.page).toEqual({ limit: 5, offset: 0, total: 1 });
      expect(page.data).toHaveLength(1);
      expect(page.data[0]).toMatchObject({ email: 'Cli.User@example.com', role: 'admin' });
      expect(Object.keys(page.data[0]).sort()).toEqual(['age', 'createdAt', 'email', 'gender', 'id', 'name', 'role', 'updatedAt']);

      const userId = JSON.stringify(page.data[0].id);
      const sqlite = (script: string) =>
        runToExit(env, ['-e', `const D=require('better-sqlite3');const db=new D(${JSON.stringify(db.url.slice(7))});${script}`]);
      // A session of whoever knew the old password: the reset ends it.
      sqlite(
        `db.prepare("insert into sessions (id, user_id, csrf_token, created_at, expires_at, auth_time, sid, amr) values ('old-session', ?, 'c', 1, 9999999999999, 1, 's', 'pwd')").run(${userId});`,
      );
      const reset = runToExit(env, [CLI, 'user:set-password', '--email', 'cli.user@example.com', '--password', 'a new long password']);
      expect(reset.status).toBe(0);
      expect(JSON.parse(reset.output)).toMatchObject({ id: page.data[0].id, email: 'Cli.User@example.com' });
      const sessionsLeft = sqlite(
        `process.stdout.write(String(db.prepare('select count(*) n from sessions where user_id=?').get(${userId}).n))`,
      );
      expect(sessionsLeft.output).toBe('0');
      const verified = runToExit(env, [
        '-e',
        `const D=require('better-sqlite3');const a=require('argon2');const db=new D(${JSON.stringify(db.url.slice(7))});` +
          `const h=db.prepare('select password_hash h from users where id=?').get(${JSON.stringify(page.data[0].id)}).h;` +
          `Promise.all([a.verify(h,'a new long password'),a.verify(h,'a long enough password')]).then(r=>process.stdout.write(JSON.stringify(r)))`,
      ]);
      expect(JSON.parse(verified.output)).toEqual([true, false]);
      const unknown = runToExit(env, [CLI, 'user:set-password', '--email', 'nobody@example.com', '--password', 'a new long password']);
      expect({ status: unknown.status, output: unknown.output.trim() }).toEqual({ status: 1, output: 'error: No such user.' });

      // A person who lost their authenticator and recovery codes: the operator removes them (the rows as the
      // account page stores them, written here directly).
      sqlite(
        `db.prepare("insert into totp_factors (user_id, secret, created_at, confirmed_at, last_step) values (?, 'JBSWY3DPEHPK3PXP', 1, 1, 0)").run(${userId});` +
          `db.prepare("insert into recovery_codes (code_hash, user_id, created_at, used_at) values ('h1', ?, 1, null)").run(${userId});` +
          `db.prepare("insert into passkeys (id, user_id, name, public_key, sign_count, transports, aaguid, device_type, backed_up, created_at) values ('cred1', ?, 'Phone', 'pk', 0, '', '00000000-0000-0000-0000-000000000000', 'multiDevice', 1, 1)").run(${userId});`,
      );
      const resetFactors = runToExit(env, [CLI, 'user:reset-factors', '--email', 'cli.user@example.com']);
      expect(resetFactors.status).toBe(0);
      expect(JSON.parse(resetFactors.output)).toEqual({ user_id: page.data[0].id, removed: ['totp', 'recovery_codes', 'passkeys'] });
      const left = sqlite(
        `process.stdout.write(JSON.stringify([db.prepare('select count(*) n from totp_factors where user_id=?').get(${userId}).n,` +
          `db.prepare('select count(*) n from recovery_codes where user_id=?').get(${userId}).n,` +
          `db.prepare('select count(*) n from passkeys where user_id=?').get(${userId}).n,` +
          `db.prepare("select actor from audit_events where type='factor.removed' and user_id=?").all(${userId}).map(r=>r.actor)]))`,
      );
      expect(JSON.parse(left.output)).toEqual([0, 0, 0, ['system', 'system']]);
      const nothing = runToExit(env, [CLI, 'user:reset-factors', '--email', 'cli.user@example.com']);
      expect(JSON.parse(nothing.output)).toEqual({ user_id: page.data[0].id, removed: [] });
      const nobody = runToExit(env, [CLI, 'user:reset-factors', '--email', 'nobody@example.com']);
      expect({ status: nobody.status, output: nobody.output.trim() }).toEqual({
        status: 1,
        output: 'error: no user with email "nobody@example.com"',
      });

      const created = runToExit(env, [CLI, 'client:create', '--name', 'Listed', '--redirect-uri', 'https://app.example.com/cb']);
      expect(created.status).toBe(0);
      const clients = runToExit(env, [CLI, 'client:list']);
      expect(clients.status).toBe(0);
      const listed = JSON.parse(clients.output);
      expect(listed.page).toEqual({ limit: 20, offset: 0, total: 1 });
      expect(listed.data[0]).toMatchObject({ client_id: JSON.parse(created.output).client_id, name: 'Listed' });
      expect(clients.output).not.toContain('secret');

      // Connections: the secret read from a file, never printed; deleted by id, then not found.
      const secretFile = join(mkdtempSync(join(tmpdir(), 'cli-')), 'secret');
      writeFileSync(secretFile, 'corp-client-secret\n');
      const connection = runToExit(env, [
        CLI,
        'connection:create',
        '--name',
        'Corp',
        '--issuer',
        'https://login.corp.example',
        '--client-id',
        'sign-in',
        '--client-secret-file',
        secretFile,
        '--domain',
        'corp.example',
      ]);
      expect(connection.status, connection.output).toBe(0);
      const made = JSON.parse(connection.output);
      expect(made).toEqual({
        id: expect.any(String),
        name: 'Corp',
        type: 'oidc',
        issuer: 'https://login.corp.example',
        client_id: 'sign-in',
        has_client_secret: true,
        domains: ['corp.example'],
        trust_upstream_mfa: false,
        admin_groups: null,
        created_at: expect.any(String),
      });
      const connections = runToExit(env, [CLI, 'connection:list']);
      expect(JSON.parse(connections.output)).toEqual([made]);
      expect(connections.output).not.toContain('corp-client-secret');
      expect(JSON.parse(runToExit(env, [CLI, 'connection:delete', made.id]).output)).toEqual({ deleted: made.id });
      const gone = runToExit(env, [CLI, 'connection:delete', made.id]);
      expect({ status: gone.status, output: gone.output.trim() }).toEqual({
        status: 1,
        output: 'error: There is no connection with this id.',
      });
    });

    it('rejects bad input with a message and a non-zero exit', () => {
      const { status, output } = runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [
        CLI,
        'user:create',
        '--email',
        'not-an-email',
        '--password',
        'short',
        '--name',
        'X',
        '--gender',
        'robot',
        '--age',
        '200',
      ]);
      expect(status).not.toBe(0);
      expect(output).toMatch(/email/);
      expect(output).toMatch(/gender must be one of: female, male, other/);
    });

    it('creates confidential and public clients; the secret is shown only for confidential ones', () => {
      const confidential = runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [
        CLI,
        'client:create',
        '--name',
        'Web app',
        '--redirect-uri',
        'https://app.example.com/cb',
        '--redirect-uri',
        'https://app.example.com/cb2',
        '--trusted',
        '--scope',
        'users:read orders:read',
        '--post-logout-redirect-uri',
        'https://app.example.com/signed-out',
        '--post-logout-redirect-uri',
        'https://app.example.com/bye',
      ]);
      expect(confidential.status).toBe(0);
      const c = JSON.parse(confidential.output);
      expect(c).toMatchObject({
        name: 'Web app',
        redirect_uris: ['https://app.example.com/cb', 'https://app.example.com/cb2'],
        post_logout_redirect_uris: ['https://app.example.com/signed-out', 'https://app.example.com/bye'],
        scope: 'users:read orders:read',
        public: false,
        trusted: true,
      });
      expect(c.client_secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);

      const pub = runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [
        CLI,
        'client:create',
        '--name',
        'Mobile',
        '--redirect-uri',
        'com.example.app:/cb',
        '--public',
      ]);
      expect(pub.status).toBe(0);
      const p = JSON.parse(pub.output);
      expect(p).toMatchObject({ public: true, trusted: false, post_logout_redirect_uris: [] });
      // Every scope but those bound to a role (clients:admin, audit:read: administrators only).
      expect(p.scope.split(' ').sort()).toEqual(ALL_SCOPES.filter((s) => scopeRole(s) === undefined).sort());
      expect(p).not.toHaveProperty('client_secret');
    });

    it('keeps stdout to the one JSON answer at the default log level: its audit line goes to stderr', () => {
      const args = [CLI, 'client:create', '--name', 'Logged', '--redirect-uri', 'https://logged.example/cb'];
      const run = spawnSync(process.execPath, args, {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', DATABASE_URL: db.url, LOG_LEVEL: 'info' },
      });
      expect(run.status).toBe(0);
      expect(JSON.parse(run.stdout.toString())).toMatchObject({ name: 'Logged' });
      const stderr = run.stderr.toString();
      const audit = stderr
        .split('\n')
        .filter((line) => line.includes('"audit"'))
        .map((line) => JSON.parse(line) as { audit: { type: string; actor: string } });
      expect(audit.map((line) => [line.audit.type, line.audit.actor])).toEqual([['client.created', 'system']]);
      expect(stderr).not.toMatch(/client_secret/);
    });

    it("changes a client's scopes and redirect URIs, and refuses an unknown client or scope in one line", () => {
      const cli = (...args: string[]) => runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [CLI, ...args]);
      const created = cli(
        'client:create',
        '--name',
        'Reporting',
        '--redirect-uri',
        'https://reports.example.com/cb',
        '--scope',
        'users:read',
      );
      expect(created.status).toBe(0);
      const { client_id: clientId } = JSON.parse(created.output) as { client_id: string };

      const updated = cli(
        'client:update',
        '--client-id',
        clientId,
        '--scope',
        'users:read orders:read',
        '--redirect-uri',
        'https://reports.example.com/cb2',
      );
      expect(updated.status).toBe(0);
      expect(JSON.parse(updated.output)).toEqual({
        client_id: clientId,
        name: 'Reporting',
        redirect_uris: ['https://reports.example.com/cb2'],
        scope: 'users:read orders:read',
        grant_types: ['authorization_code', 'refresh_token'],
        refresh_grace_seconds: 0,
        resources: [],
        post_logout_redirect_uris: [],
        public: false,
        trusted: false,
      });

      const withLogout = cli('client:update', '--client-id', clientId, '--post-logout-redirect-uri', 'https://reports.example.com/bye');
      expect(withLogout.status).toBe(0);
      expect(JSON.parse(withLogout.output).post_logout_redirect_uris).toEqual(['https://reports.example.com/bye']);
      const cleared = cli('client:update', '--client-id', clientId, '--clear-post-logout-redirect-uris');
      expect(cleared.status).toBe(0);
      expect(JSON.parse(cleared.output).post_logout_redirect_uris).toEqual([]);

      // A scope a new module adds, granted without restating the others; and one taken away.
      const added = cli('client:update', '--client-id', clientId, '--add-scope', 'orders:write users:read');
      expect(added.status, added.output).toBe(0);
      expect(JSON.parse(added.output).scope).toBe('users:read orders:read orders:write');
      const removed = cli('client:update', '--client-id', clientId, '--remove-scope', 'orders:read');
      expect(removed.status, removed.output).toBe(0);
      expect(JSON.parse(removed.output).scope).toBe('users:read orders:write');

      for (const [args, message] of [
        [
          ['--client-id', clientId, '--clear-post-logout-redirect-uris', '--post-logout-redirect-uri', 'https://reports.example.com/bye'],
          'error: --post-logout-redirect-uri and --clear-post-logout-redirect-uris exclude each other',
        ],
        [['--client-id', 'no-such-client', '--scope', 'users:read'], 'error: no client with id "no-such-client"'],
        [['--client-id', clientId, '--scope', 'users:read admin:everything'], 'error: --scope must be a subset of:'],
        [['--client-id', clientId, '--add-scope', 'admin:everything'], 'error: --add-scope must name scopes among:'],
        [['--client-id', clientId, '--remove-scope', 'users:read orders:write'], 'error: --remove-scope would leave the client no scope'],
        [
          ['--client-id', clientId, '--scope', 'users:read', '--add-scope', 'orders:read'],
          'error: --scope replaces the scopes: give it, or --add-scope / --remove-scope, not both',
        ],
        [['--scope', 'users:read'], "error: required option '--client-id <id>' not specified"],
      ] as const) {
        const refused = cli('client:update', ...args);
        expect(refused.status).toBe(1);
        expect(refused.output.trim().split('\n')).toHaveLength(1);
        expect(refused.output).toContain(message);
      }
    });

    it('registers a service client with --grant client_credentials (no redirect URI) and a client with --refresh-grace; refuses --public service clients and a malformed grace', () => {
      const cli = (...args: string[]) => runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [CLI, ...args]);
      const created = cli('client:create', '--name', 'Nightly export', '--grant', 'client_credentials', '--scope', 'users:read');
      const graceful = cli('client:create', '--name', 'Mobile', '--redirect-uri', 'https://m.example/cb', '--refresh-grace', '10');
      expect(graceful.status, graceful.output).toBe(0);
      expect(JSON.parse(graceful.output)).toMatchObject({
        refresh_grace_seconds: 10,
        grant_types: ['authorization_code', 'refresh_token'],
      });
      const badGrace = cli('client:create', '--name', 'Mobile', '--redirect-uri', 'https://m.example/cb', '--refresh-grace', '5s');
      expect(badGrace.status).toBe(1);
      expect(badGrace.output).toContain('error: --refresh-grace must be a whole number of seconds from 0 to 60');
      expect(created.status, created.output).toBe(0);
      const view = JSON.parse(created.output) as Record<string, unknown>;
      expect(view).toMatchObject({ grant_types: ['client_credentials'], redirect_uris: [], scope: 'users:read', public: false });
      expect(view.client_secret).toEqual(expect.any(String));

      const refused = cli('client:create', '--name', 'Agent', '--public', '--grant', 'client_credentials');
      expect(refused.status).toBe(1);
      expect(refused.output.trim().split('\n')).toHaveLength(1);
      expect(refused.output).toContain('error: --grant client_credentials is for confidential clients only');
    });

    it('rotates the signing key and publishes old and new keys', async () => {
      const rotated = runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, [CLI, 'keys:rotate']);
      expect(rotated.status).toBe(0);
      const { kid } = JSON.parse(rotated.output) as { kid: string };
      const svc = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
      try {
        const jwks = (await (await fetch(`${svc.baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
        expect(jwks.keys.map((k) => k.kid)).toContain(kid);
        expect(jwks.keys.length).toBeGreaterThanOrEqual(2);
      } finally {
        svc.child.kill('SIGTERM');
        await svc.exit;
      }
    });

    it('refuses an unknown command', () => {
      const { status, output } = runToExit({ DATABASE_URL: db.url }, [CLI, 'users:nuke']);
      expect(status).toBe(1);
      expect(output).toContain('unknown command');
    });
  });
});
