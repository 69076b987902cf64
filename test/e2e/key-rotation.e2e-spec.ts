import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app-config';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { KEY_CLOCK, type KeyClock } from '../../src/keys/key-clock';
import type { KeyAction } from '../../src/keys/key-lifecycle';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { decodeJwt, resourceStatus } from '../support/oauth';
import { buildOnce, runToExit } from '../support/service-process';
import { type TestApp, type TestDatabase, createTestApp, createTestDatabase } from '../support/test-app';

const DAY = 86_400_000;

/** The keys' clock of the instances under test, moved by hand. */
class FakeClock implements KeyClock {
  constructor(public time: number) {}
  now(): number {
    return this.time;
  }
}

interface Instances {
  db: TestDatabase;
  clock: FakeClock;
  a: TestApp;
  b: TestApp;
  /** The first key, active since the instances started. */
  first: { kid: string; activatesAt: number };
}

const keysOf = (t: TestApp) => t.app.get(SigningKeysService);

async function publishedKids(t: TestApp): Promise<string[]> {
  const res = await t.http().get('/.well-known/jwks.json');
  expect(res.status).toBe(200);
  return (res.body.keys as { kid: string }[]).map((k) => k.kid).sort();
}

/** By kid, in code-point order (the databases' collations differ). */
function byKid<R extends { kid: string }>(rows: R[]): R[] {
  return [...rows].sort((x, y) => (x.kid < y.kid ? -1 : 1));
}

async function storedKeys(t: TestApp): Promise<{ kid: string; state: string }[]> {
  return byKid(await t.app.get(DataSource).query('SELECT kid, state FROM signing_keys'));
}

const kidOf = (token: string) => decodeJwt(token).header.kid as string;

function published(actions: KeyAction[]): KeyAction & { type: 'publish' } {
  const publish = actions.find((action) => action.type === 'publish');
  if (!publish) throw new Error(`no key published: ${JSON.stringify(actions)}`);
  return publish;
}

/** Scheduled rotation of the signing keys, on two instances sharing one database and one (fake) keys' clock. */
describe('scheduled signing-key rotation', () => {
  const running: Instances[] = [];

  afterAll(async () => {
    for (const { a, b, db } of running) {
      await a.close();
      await b.close();
      await db.drop();
    }
  });

  async function twoInstances(): Promise<Instances> {
    const db = await createTestDatabase();
    const clock = new FakeClock(Date.now());
    const overrides = [{ provide: KEY_CLOCK, useValue: clock }];
    const a = await createTestApp({}, db, { overrides });
    const b = await createTestApp({}, db, { overrides });
    const active = keysOf(a).activeKey();
    const instances = { db, clock, a, b, first: { kid: active.kid, activatesAt: active.activatesAt } };
    running.push(instances);
    return instances;
  }

  /** Moves the clock to when the next key is due (90 - 14 days after the first's activation) and runs the check at a. */
  async function publishNext({ clock, a, b, first }: Instances): Promise<{ kid: string; activatesAt: number }> {
    clock.time = first.activatesAt + 76 * DAY;
    const { kid, activatesAt } = published(await keysOf(a).checkRotation());
    // What every instance does within 30 seconds.
    await keysOf(b).reload();
    return { kid, activatesAt };
  }

  it('publishes the next key in the JWKS KEY_PROPAGATION_DAYS before it signs', async () => {
    const instances = await twoInstances();
    const { clock, a, b, first } = instances;
    clock.time = first.activatesAt + 76 * DAY - 1;
    await expect(keysOf(a).checkRotation()).resolves.toEqual([]);

    const next = await publishNext(instances);
    expect(next.activatesAt).toBe(first.activatesAt + 90 * DAY);
    expect(next.kid).not.toBe(first.kid);
    for (const t of [a, b]) {
      expect(await publishedKids(t)).toEqual([first.kid, next.kid].sort());
      expect(kidOf(await t.token((await t.createUser()).id))).toBe(first.kid);
    }
    expect(await storedKeys(a)).toEqual(
      byKid([
        { kid: first.kid, state: 'active' },
        { kid: next.kid, state: 'published' },
      ]),
    );
    // Published, but not due again: the check publishes no second key.
    clock.time = next.activatesAt - 1;
    await expect(keysOf(b).checkRotation()).resolves.toEqual([]);
  });

  it('signs on every instance with the new key from its activation time, and tokens of both keys verify', async () => {
    const instances = await twoInstances();
    const { clock, a, b, first } = instances;
    const next = await publishNext(instances);
    const user = await a.createUser();
    const before = await a.token(user.id);
    expect(kidOf(before)).toBe(first.kid);

    clock.time = next.activatesAt;
    // No check has run yet: each instance reads the switch off the timestamps it has cached.
    const afterA = await a.token(user.id);
    const afterB = await b.token(user.id);
    expect([kidOf(afterA), kidOf(afterB)]).toEqual([next.kid, next.kid]);
    for (const t of [a, b]) {
      for (const token of [before, afterA, afterB]) expect(await resourceStatus(t, token)).toBe(200);
      expect(await publishedKids(t)).toEqual([first.kid, next.kid].sort());
    }

    // The check records the switch, once.
    await expect(keysOf(b).checkRotation()).resolves.toEqual([
      { type: 'activate', kid: next.kid },
      { type: 'retire', kid: first.kid },
    ]);
    await expect(keysOf(a).checkRotation()).resolves.toEqual([]);
    expect(await storedKeys(a)).toEqual(
      byKid([
        { kid: first.kid, state: 'retired' },
        { kid: next.kid, state: 'active' },
      ]),
    );
  });

  it('keeps the retired key published KEY_RETIREMENT_DAYS, then drops it from the JWKS and refuses its tokens', async () => {
    const instances = await twoInstances();
    const { clock, a, b, first } = instances;
    const next = await publishNext(instances);
    const user = await a.createUser();
    const presented = await a.token(user.id);
    const unseen = await b.token(user.id);
    expect([kidOf(presented), kidOf(unseen)]).toEqual([first.kid, first.kid]);
    expect(await resourceStatus(a, presented)).toBe(200);

    clock.time = next.activatesAt + 14 * DAY - 1;
    for (const t of [a, b]) {
      expect(await resourceStatus(t, presented)).toBe(200);
      expect(await publishedKids(t)).toEqual([first.kid, next.kid].sort());
    }
    expect(await resourceStatus(b, unseen)).toBe(200);

    clock.time = next.activatesAt + 14 * DAY;
    for (const t of [a, b]) {
      expect(await publishedKids(t)).toEqual([next.kid]);
      // Cached as verified at a, and never seen at b: refused alike.
      expect(await resourceStatus(t, presented)).toBe(401);
      expect(await resourceStatus(t, unseen)).toBe(401);
      expect(await resourceStatus(t, await t.token(user.id))).toBe(200);
    }

    await expect(keysOf(a).checkRotation()).resolves.toEqual([
      { type: 'activate', kid: next.kid },
      { type: 'retire', kid: first.kid },
      { type: 'remove', kid: first.kid },
    ]);
    await expect(keysOf(b).checkRotation()).resolves.toEqual([]);
    expect(await storedKeys(b)).toEqual([{ kid: next.kid, state: 'active' }]);
  });

  it('publishes exactly one key when two instances run the check at the same time', async () => {
    const { clock, a, b, first } = await twoInstances();
    clock.time = first.activatesAt + 80 * DAY;
    const [atA, atB] = await Promise.all([keysOf(a).checkRotation(), keysOf(b).checkRotation()]);
    const publishes = [...atA, ...atB].filter((action) => action.type === 'publish');
    expect(publishes).toEqual([{ type: 'publish', kid: expect.any(String), activatesAt: first.activatesAt + 94 * DAY }]);
    expect([atA.length, atB.length].sort()).toEqual([0, 2]);
    const rows = await storedKeys(a);
    expect(rows.map((row) => row.kid).sort()).toEqual([first.kid, publishes[0].kid].sort());
    await keysOf(a).reload();
    await keysOf(b).reload();
    expect(await publishedKids(a)).toEqual(await publishedKids(b));
    expect(await publishedKids(a)).toHaveLength(2);
    // The audit trail has each change once, written with it, by the system.
    const audit = await a.app.get(AuditService).list(Object.assign(new AuditEventsQueryDto(), { type: 'key.rotated', order: 'asc' }));
    const actions = [...atA, ...atB];
    const kids = new Set(actions.map((action) => action.kid));
    const changes = audit.data
      .filter((event) => kids.has(event.details?.kid as string) && event.at === new Date(clock.time).toISOString())
      .map((event) => `${event.actor} ${event.details?.change as string} ${event.details?.kid as string}`);
    expect(changes.sort()).toEqual(actions.map((action) => `system ${action.type} ${action.kid}`).sort());
  });

  it('keys:rotate (emergency): the new key signs at once, the old one retires at once, a waiting successor is withdrawn', async () => {
    const instances = await twoInstances();
    const { clock, a, b, first } = instances;
    const waiting = await publishNext(instances);
    const user = await a.createUser();
    const old = await a.token(user.id);

    const emergency = await keysOf(b).rotate();
    await keysOf(a).reload();
    for (const t of [a, b]) {
      expect(kidOf(await t.token(user.id))).toBe(emergency);
      expect(await publishedKids(t)).toEqual([first.kid, emergency].sort());
      expect(await resourceStatus(t, old)).toBe(200);
    }
    expect((await storedKeys(a)).map((row) => row.kid)).not.toContain(waiting.kid);

    // The old key stays published KEY_RETIREMENT_DAYS from the emergency, and the schedule counts from the new key.
    const rotatedAt = clock.time;
    clock.time = rotatedAt + 14 * DAY;
    await expect(keysOf(a).checkRotation()).resolves.toEqual([{ type: 'remove', kid: first.kid }]);
    expect(await publishedKids(b)).toEqual([emergency]);
    clock.time = rotatedAt + 76 * DAY;
    expect(published(await keysOf(a).checkRotation()).activatesAt).toBe(rotatedAt + 90 * DAY);
  });

  it('with KEY_ROTATION_DAYS=0 never publishes a key on its own', async () => {
    const db = await createTestDatabase();
    const clock = new FakeClock(Date.now());
    const t = await createTestApp({ KEY_ROTATION_DAYS: '0' }, db, { overrides: [{ provide: KEY_CLOCK, useValue: clock }] });
    try {
      clock.time += 1000 * DAY;
      await expect(keysOf(t).checkRotation()).resolves.toEqual([]);
      expect(await storedKeys(t)).toHaveLength(1);
    } finally {
      await t.close();
      await db.drop();
    }
  });
});

describe('signing-key rotation configuration and migration', () => {
  beforeAll(() => buildOnce());

  it('refuses to start, in one line, when KEY_RETIREMENT_DAYS is shorter than the access-token lifetime', async () => {
    const message =
      'KEY_RETIREMENT_DAYS (14) must cover the longest access-token lifetime: ACCESS_TOKEN_TTL plus 30 s of clock skew is 1296030 s, at least 16 days';
    const db = await createTestDatabase();
    try {
      await expect(createTestApp({ ACCESS_TOKEN_TTL: '1296000' }, db)).rejects.toThrow(message);
      const { status, output } = runToExit({ DATABASE_URL: db.url, ACCESS_TOKEN_TTL: '1296000' });
      expect(status).toBe(1);
      expect(output.trim().split('\n')).toEqual([`configuration error: ${message}`]);
      const started = await createTestApp({ ACCESS_TOKEN_TTL: '1296000', KEY_RETIREMENT_DAYS: '16' }, db);
      await started.close();
    } finally {
      await db.drop();
    }
  });

  it('migrates existing keys: each signed from its creation, the older ones retired when the next was made', async () => {
    const db = await createTestDatabase();
    const dataSource = new DataSource(await dataSourceOptions(AppConfig.fromEnv({}, { DATABASE_URL: db.url })));
    await dataSource.initialize();
    try {
      await dataSource.runMigrations();
      const applied = async () => ((await dataSource.query('SELECT name FROM migrations')) as { name: string }[]).map((m) => m.name);
      while ((await applied()).includes('SigningKeyLifecycle1795500500000')) await dataSource.undoLastMigration();
      const t = 1_700_000_000_000;
      for (const [kid, createdAt] of [
        ['oldest', t],
        ['older', t + 10 * DAY],
        ['newest', t + 20 * DAY],
      ] as const) {
        await dataSource.query(
          `INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at) VALUES ('${kid}', '{}', '{}', ${createdAt})`,
        );
      }
      await dataSource.runMigrations();
      const rows = (await dataSource.query(
        'SELECT kid, activates_at, retires_at, unpublishes_at, state FROM signing_keys ORDER BY created_at',
      )) as Record<string, unknown>[];
      const asNumber = (v: unknown) => (v === null ? null : Number(v));
      expect(rows.map((r) => [r.kid, asNumber(r.activates_at), asNumber(r.retires_at), asNumber(r.unpublishes_at), r.state])).toEqual([
        ['oldest', t, t + 10 * DAY, t + 24 * DAY, 'retired'],
        ['older', t + 10 * DAY, t + 20 * DAY, t + 34 * DAY, 'retired'],
        ['newest', t + 20 * DAY, null, null, 'active'],
      ]);
    } finally {
      await dataSource.destroy();
      await db.drop();
    }
  });
});
