import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { allScopes, defaultClientScope } from '../../src/auth/scopes';
import { configVariables } from '../../src/config/env';
import { cookiesOf, demoFrom } from '../support/live-service';
import { type ParsedForm, parseForms } from '../support/oauth';
import { MAIN, ROOT, type RunningService, buildOnce, runToExit, onServerPort, startService } from '../support/service-process';
import { type TestDatabase, createTestDatabase } from '../support/test-app';

/**
 * The compose files, checked where no Docker engine runs: the image's command line (the Dockerfile's CMD) is started
 * from the built tree with the image's ENV and a compose file's environment over it, as a container would be, with
 * the compose network's host names replaced by this machine's PostgreSQL and Redis.
 */

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
}
interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const composeFile = (file: string) => parse(readFileSync(join(ROOT, file), 'utf8')) as ComposeFile;

/** The image's last stage: its ENV (a container's environment before compose's) and its CMD in JSON form. */
function image(): { env: Record<string, string>; cmd: string[] } {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const stage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const env: Record<string, string> = {};
  for (const [, line] of stage.matchAll(/^ENV (.+)$/gm)) {
    for (const [, name, quoted, plain] of line.matchAll(/(\w+)=(?:"([^"]*)"|(\S*))/g)) env[name] = quoted ?? plain;
  }
  return { env, cmd: JSON.parse(/^CMD (\[.*\])$/m.exec(stage)![1]) as string[] };
}

/** The CMD as node's arguments from the repository's root: the image's dist/ is the tests' build of the same sources. */
function imageArgs(cmd: string[]): string[] {
  expect(cmd[0]).toBe('node');
  expect(cmd.at(-1)).toBe('dist/src/main.js');
  return [...cmd.slice(1, -1), MAIN];
}

/** A browser's cookie jar and form submission, over fetch, for the service as a separate process. */
class Browser {
  private readonly cookies = new Map<string, string>();

  async get(url: string): Promise<Response> {
    return this.keep(await fetch(url, { redirect: 'manual', headers: this.header() }));
  }

  async submit(base: string, form: ParsedForm, extra: Record<string, string>): Promise<Response> {
    const body = new URLSearchParams({ ...form.hidden, ...extra });
    const headers = { ...this.header(), 'content-type': 'application/x-www-form-urlencoded' };
    return this.keep(await fetch(new URL(form.action!, base), { method: 'POST', redirect: 'manual', headers, body }));
  }

  private header(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') } : {};
  }

  private keep(res: Response): Response {
    for (const pair of cookiesOf(res)) this.cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    return res;
  }
}

const formOf = (html: string, action: string): ParsedForm => parseForms(html).find((form) => form.action === action)!;

/** The demo block's admin and client, its authorization URL (the line after step 2's) and its PKCE verifier. */
function printed(output: string): { demo: ReturnType<typeof demoFrom>; authorization: URL; verifier: string } {
  const lines = output.split('\n');
  const step2 = lines.findIndex((l) => l.startsWith('  2. open in a browser'));
  const verifier = /CODE_VERIFIER=(\S+)/.exec(output)![1];
  return { demo: demoFrom(output), authorization: new URL(lines[step2 + 1].trim()), verifier };
}

describe('docker-compose.dev.yml: the browser flow on a laptop', () => {
  const dev = composeFile('docker-compose.dev.yml');
  const app = dev.services.app;
  let db: TestDatabase;
  let svc: RunningService;
  let issuer: string;

  beforeAll(async () => {
    buildOnce();
    // The container's environment, with what names the compose network made this machine's (the first test checks
    // the values replaced): postgres, a fresh database; redis, a database index of its own, so that its rate-limit
    // counters meet no other suite's; the published port, a free one on the same address (HOST too: the port is
    // published on that address only).
    db = await createTestDatabase(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    const redis = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
    redis.pathname = '/7';
    const container = { ...image().env, ...app.environment };
    const host = app.ports![0].split(':')[0];
    svc = await onServerPort((port) => {
      const published = new URL(app.environment!.ISSUER);
      published.port = String(port);
      issuer = published.origin;
      const local = { DATABASE_URL: db.url, REDIS_URL: redis.toString(), HOST: host, PORT: String(port), ISSUER: issuer };
      return startService({ ...container, ...local }, port, imageArgs(image().cmd));
    });
  });
  afterAll(async () => {
    if (svc && svc.child.exitCode === null) {
      svc.child.kill('SIGTERM');
      await svc.exit;
    }
    await db?.drop();
  });

  it('points the app at its own postgres and redis services and at the port it publishes, naming only known variables', () => {
    const env = app.environment!;
    for (const name of Object.keys(env)) expect(configVariables(), name).toContain(name);
    const pg = dev.services.postgres.environment!;
    expect(env.DATABASE_URL).toBe(`postgres://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@postgres:5432/${pg.POSTGRES_DB}`);
    expect(env.REDIS_URL).toBe('redis://redis:6379');
    expect(Object.keys(dev.services).sort()).toEqual(['app', 'postgres', 'redis']);
    expect(app.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
    // Published on the laptop's loopback only; the issuer is that address as a browser there types it.
    expect(app.ports).toEqual([`127.0.0.1:${env.PORT}:${env.PORT}`]);
    expect(env.ISSUER).toBe(`http://localhost:${env.PORT}`);
    // Listening on every interface of the container, so that the published port reaches it.
    expect(env.HOST).toBe('0.0.0.0');
  });

  it('overrides the image in development, needing no variable of the host and no KEY_ENCRYPTION_KEY', () => {
    expect(image().env).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0' });
    expect(app.environment!.NODE_ENV).toBe('development');
    expect(JSON.stringify(dev)).not.toContain('${');
    expect(app.environment).not.toHaveProperty('KEY_ENCRYPTION_KEY');
    expect(app.environment).not.toHaveProperty('TRUST_PROXY');
  });

  it('builds, stores and checks as the production file does: only the environment and the project name differ', () => {
    const production = composeFile('docker-compose.yml');
    expect(dev.name).toBe('oauth-resource-service-dev');
    expect(production.name).toBeUndefined();
    expect(dev.services.postgres).toEqual(production.services.postgres);
    expect(dev.services.redis).toEqual(production.services.redis);
    expect(dev.volumes).toEqual(production.volumes);
    expect({ ...app, environment: undefined }).toEqual({ ...production.services.app, environment: undefined });
  });

  it("starts the image's command line on PostgreSQL and Redis, and prints the demo data with the issuer's URLs", async () => {
    const port = new URL(issuer).port;
    const lines = svc.output().trimEnd().split('\n');
    expect(lines.at(-1)).toBe(`ready: listening on http://127.0.0.1:${port}, issuer ${issuer}`);
    const block = lines.slice(lines.indexOf('Demo data created (shown only once):'), -1);
    const { demo, authorization, verifier } = printed(block.join('\n'));
    expect(block).toContain(`  admin login:  admin@example.com / ${demo.password}`);
    expect(block.join('\n')).toContain(`-d redirect_uri=${issuer}/demo/callback ${issuer}/token`);
    expect(authorization.origin + authorization.pathname).toBe(`${issuer}/authorize`);
    expect(Object.fromEntries(authorization.searchParams)).toEqual({
      response_type: 'code',
      client_id: demo.clientId,
      redirect_uri: `${issuer}/demo/callback`,
      scope: allScopes().join(' '),
      state: authorization.searchParams.get('state'),
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });

    const ready = await fetch(`${issuer}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('signs the printed admin in through the printed authorization URL, asks consent once, and trades the code at /token', async () => {
    const { demo, authorization, verifier } = printed(svc.output());
    const browser = new Browser();

    const authorize = await browser.get(authorization.toString());
    expect(authorize.status).toBe(302);
    const loginUrl = new URL(authorize.headers.get('location')!, issuer);
    expect(loginUrl.origin + loginUrl.pathname).toBe(`${issuer}/login`);
    const loginPage = await browser.get(loginUrl.toString());
    expect(loginPage.status).toBe(200);
    const signedIn = await browser.submit(issuer, formOf(await loginPage.text(), '/login'), {
      email: 'admin@example.com',
      password: demo.password,
    });
    expect(signedIn.status).toBe(303);

    const consent = await browser.get(new URL(signedIn.headers.get('location')!, issuer).toString());
    expect(consent.status).toBe(200);
    const allowed = await browser.submit(issuer, formOf(await consent.text(), '/authorize/consent'), { decision: 'allow' });
    expect(allowed.status).toBe(303);
    const callback = new URL(allowed.headers.get('location')!);
    expect(callback.origin + callback.pathname).toBe(`${issuer}/demo/callback`);
    expect(callback.searchParams.get('state')).toBe(authorization.searchParams.get('state'));
    expect(callback.searchParams.get('iss')).toBe(issuer);
    const page = await browser.get(callback.toString());
    expect(page.status).toBe(200);
    const code = /<code id="code">([^<]+)<\/code>/.exec(await page.text())![1];
    expect(code).toBe(callback.searchParams.get('code'));

    // The printed curl line: the client's credentials in Basic, the code, its verifier and the redirect URI.
    const token = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${demo.clientId}:${demo.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: `${issuer}/demo/callback`,
      }),
    });
    expect(token.status).toBe(200);
    const tokens = (await token.json()) as Record<string, unknown>;
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
    // Asked for every scope; granted the demo client's: every scope bound to no role.
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 900, scope: defaultClientScope() });
    const claims = JSON.parse(Buffer.from(String(tokens.access_token).split('.')[1], 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ iss: issuer, aud: issuer, client_id: demo.clientId });
    const api = await fetch(`${issuer}/api/resource`, { headers: { authorization: `Bearer ${String(tokens.access_token)}` } });
    expect(api.status).toBe(200);

    // Asked once: the next flow goes straight back to the demo client.
    const again = await browser.get(authorization.toString());
    expect(again.status).toBe(302);
    expect(new URL(again.headers.get('location')!).pathname).toBe('/demo/callback');
  });
});

describe('docker-compose.yml keeps its production guarantees', () => {
  const env = composeFile('docker-compose.yml').services.app.environment!;
  beforeAll(() => buildOnce());

  it('runs in production with an https issuer behind a proxy, and compose refuses to start without KEY_ENCRYPTION_KEY', () => {
    expect(env.NODE_ENV).toBe('production');
    expect(new URL(env.ISSUER).protocol).toBe('https:');
    expect(env.TRUST_PROXY).toBe('true');
    // `${VAR:?message}`: compose stops with the message when the variable is unset or empty.
    expect(env.KEY_ENCRYPTION_KEY).toMatch(/^\$\{KEY_ENCRYPTION_KEY:\?[^}]+\}$/);
  });

  it("refuses, started as the image with the file's environment but no KEY_ENCRYPTION_KEY, in one line", () => {
    const rest = Object.fromEntries(Object.entries(env).filter(([name]) => name !== 'KEY_ENCRYPTION_KEY'));
    // The configuration is checked before any connection: the compose host names need no replacement here.
    const { status, output } = runToExit({ ...image().env, ...rest }, imageArgs(image().cmd));
    expect({ status, output: output.trim() }).toEqual({
      status: 1,
      output: 'configuration error: KEY_ENCRYPTION_KEY is required when NODE_ENV=production (openssl rand -base64 32)',
    });
  });
});
