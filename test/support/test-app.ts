import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModuleMetadata } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { Client } from 'pg';
import request, { type Agent as TestAgent } from 'supertest';
import { AppModule } from '../../src/app.module';
import { TokenIssuer } from '../../src/oauth/grants/token-issuer.service';
import { type Scope, allScopes } from '../../src/auth/scopes';
import { AppConfig } from '../../src/config/app-config';
import { ENV } from '../../src/config/env';
import { configureApp, httpServerOptions } from '../../src/configure-app';
import { ExpressHttpAdapter } from '../../src/common/express-adapter';
import type { CreateUserDto } from '../../src/users/dto/create-user.dto';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { UsersService } from '../../src/users/users.service';
import { DocumentedStatuses } from './documented-statuses';
import { listenOnFreePort } from './service-process';

/** Every scope the application's modules define (read from the registry, never spelled out here). */
export const ALL_SCOPES: Scope[] = allScopes();
export const TEST_PASSWORD = 'correct horse battery staple';

/**
 * A database of its own for one suite: a temp SQLite file, or a fresh PostgreSQL database through `admin` (by default
 * TEST_DATABASE_URL) when that is set.
 */
export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(admin = process.env.TEST_DATABASE_URL): Promise<TestDatabase> {
  if (admin) {
    const name = `t_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const client = new Client({ connectionString: admin });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    const url = new URL(admin);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      async drop() {
        const c = new Client({ connectionString: admin });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const file = join(tmpdir(), `oauth-svc-test-${randomUUID()}.sqlite`);
  return {
    url: `sqlite:${file}`,
    async drop() {
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    },
  };
}

export interface TestApp {
  app: NestExpressApplication;
  config: AppConfig;
  http: () => TestAgent;
  databaseUrl: string;
  /** A user created through the service (the password is {@link TEST_PASSWORD}). */
  createUser(overrides?: Partial<CreateUserDto>): Promise<UserResponseDto>;
  /** An access token minted by the service's own token service, as the authorization server would. */
  token(sub: string, scopes?: Scope[] | string, clientId?: string): Promise<string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Modules imported next to AppModule (e.g. DiscoveryModule for the route inventory). */
  imports?: ModuleMetadata['imports'];
  /** Providers replaced by values (e.g. the signing keys' clock, KEY_CLOCK). */
  overrides?: { provide: unknown; useValue: unknown }[];
}

export async function createTestApp(
  env: Record<string, string> = {},
  existingDb?: TestDatabase,
  options: TestAppOptions = {},
): Promise<TestApp> {
  const db = existingDb ?? (await createTestDatabase());
  const builder = Test.createTestingModule({ imports: [AppModule, ...(options.imports ?? [])] })
    .overrideProvider(ENV)
    // No retention job on a timer (a test runs it itself): it would delete the expired rows a test sets up.
    .useValue({ ...process.env, NODE_ENV: 'test', PRUNE_INTERVAL_SECONDS: '0', ...env, DATABASE_URL: db.url });
  for (const { provide, useValue } of options.overrides ?? []) builder.overrideProvider(provide).useValue(useValue);
  const moduleRef = await builder.compile();
  const adapter = new ExpressHttpAdapter(httpServerOptions(moduleRef.get(AppConfig)));
  const app = moduleRef.createNestApplication<NestExpressApplication>(adapter, {
    bodyParser: false,
    logger: ['error', 'warn'],
  });
  configureApp(app);
  const statuses = new DocumentedStatuses();
  statuses.install(app);
  await app.init();
  const config = app.get(AppConfig);
  const tokens = app.get(TokenIssuer);
  const users = app.get(UsersService);
  let counter = 0;
  return {
    app,
    config,
    databaseUrl: db.url,
    http: () => request(app.getHttpServer()),
    async createUser(overrides = {}) {
      counter += 1;
      return users.create({
        email: `user-${counter}-${randomUUID().slice(0, 8)}@example.com`,
        password: TEST_PASSWORD,
        name: `User ${counter}`,
        gender: 'female',
        age: 30,
        role: 'user',
        ...overrides,
      });
    },
    async token(sub, scopes = ALL_SCOPES, clientId = 'test-client') {
      const scope = typeof scopes === 'string' ? scopes : scopes.join(' ');
      return tokens.mintAccessToken({ sub, clientId, scope, grantId: randomUUID() }).token;
    },
    async close() {
      // Every status this app answered must be in the OpenAPI document (read before the app goes away).
      const document = (await request(app.getHttpServer()).get('/docs/openapi.json')).body;
      await app.close();
      if (!existingDb) await db.drop();
      const undocumented = statuses.undocumented(document);
      if (undocumented.length) throw new Error(`answered but not in the OpenAPI document:\n  ${undocumented.join('\n  ')}`);
    },
  };
}

export function bearer(token: string): [string, string] {
  return ['Authorization', `Bearer ${token}`];
}

/**
 * A test app listening on a free port of 127.0.0.1, whose ISSUER is that origin: for clients that speak real HTTP
 * (openid-client, oauth4webapi, a browser). `hostname` names it otherwise in the origin (`localhost`: passkeys need
 * a domain, not an address, as their relying-party id).
 */
export async function createListeningTestApp(
  env: Record<string, string> = {},
  hostname = '127.0.0.1',
  existingDb?: TestDatabase,
): Promise<TestApp & { origin: string }> {
  // The port comes first (the issuer names it): a server listening on port 0 hands each connection it accepts to
  // the app's HTTP server (Node's documented way to inject connections), so no other suite can take the port.
  const listener = createServer();
  const port = await listenOnFreePort(listener);
  const origin = `http://${hostname}:${port}`;
  const t = await createTestApp({ ...env, ISSUER: origin }, existingDb).catch((error: unknown) => {
    listener.close();
    throw error;
  });
  // The app's server listens too (on a port nobody is told): supertest (`t.http()`) would otherwise listen and close
  // it around each request, and the close would end the idle keep-alive connections injected here.
  await t.app.listen(0, '127.0.0.1');
  const sockets = new Set<Socket>();
  listener.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    t.app.getHttpServer().emit('connection', socket);
  });
  const closeApp = t.close;
  return Object.assign(t, {
    origin,
    async close() {
      listener.close();
      for (const socket of sockets) socket.destroy();
      await closeApp();
    },
  });
}

/** Two instances of the app sharing one fresh database — all that instances share — and their clean-up. */
export async function createTwoInstances(env: Record<string, string> = {}): Promise<{ a: TestApp; b: TestApp; close(): Promise<void> }> {
  const db = await createTestDatabase();
  const a = await createTestApp(env, db);
  const b = await createTestApp(env, db);
  return {
    a,
    b,
    async close() {
      await b.close();
      await a.close();
      await db.drop();
    },
  };
}
