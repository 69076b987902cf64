import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_REQUEST } from '../../src/audit/audit-events';
import { SecondFactorsService } from '../../src/mfa/second-factors.service';
import { totpCode } from '../../src/mfa/totp';
import { CLI, buildOnce, runToExit } from '../support/service-process';
import { type TestApp, type TestDatabase, createTestApp, createTestDatabase } from '../support/test-app';

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('hex');

async function storedKeys(t: TestApp): Promise<{ kid: string; private_jwk: string }[]> {
  return t.app.get(DataSource).query('SELECT kid, private_jwk FROM signing_keys');
}

async function publishedKids(t: TestApp): Promise<string[]> {
  const res = await t.http().get('/.well-known/jwks.json');
  return (res.body.keys as { kid: string }[]).map((k) => k.kid);
}

function reencrypt(db: TestDatabase, env: Record<string, string>) {
  const run = runToExit({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', ...env }, [CLI, 'keys:reencrypt']);
  return { ...run, lines: run.output.trim().split('\n') };
}

describe('private signing keys at rest (KEY_ENCRYPTION_KEY)', () => {
  const databases: TestDatabase[] = [];
  beforeAll(() => buildOnce());
  afterAll(async () => {
    for (const db of databases) await db.drop();
  });

  async function database(): Promise<TestDatabase> {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  }

  it('are stored sealed, and only the right key-encryption key opens them; keys:reencrypt moves them to a new one', async () => {
    const db = await database();
    const first = await createTestApp({ KEY_ENCRYPTION_KEY: K1 }, db);
    let kid: string;
    // A person's authenticator being set up: its secret is sealed with the same key-encryption key.
    let totp: { userId: string; secret: string };
    try {
      const person = await first.createUser();
      totp = { userId: person.id, secret: (await first.app.get(SecondFactorsService).beginTotp(person.id, person.email, 'test'))!.secret };
      const [sealed] = (await first.app.get(DataSource).query(`SELECT secret FROM totp_factors WHERE user_id = '${person.id}'`)) as {
        secret: string;
      }[];
      expect(sealed.secret).toMatch(/^kek1\./);
      expect(sealed.secret).not.toContain(totp.secret);
      const rows = await storedKeys(first);
      expect(rows).toHaveLength(1);
      kid = rows[0].kid;
      expect(rows[0].private_jwk).toMatch(/^kek1\./);
      expect(rows[0].private_jwk).not.toMatch(/"d"|"p"|"q"/);
      const user = await first.createUser();
      const res = await first
        .http()
        .get('/api/resource')
        .set('Authorization', `Bearer ${await first.token(user.id)}`);
      expect(res.status).toBe(200);
    } finally {
      await first.close();
    }

    await expect(createTestApp({}, db)).rejects.toThrow(/encrypted and KEY_ENCRYPTION_KEY is not set/);
    await expect(createTestApp({ KEY_ENCRYPTION_KEY: K2 }, db)).rejects.toThrow(/another key-encryption key/);

    // While the key-encryption key is replaced, an instance given both reads the keys.
    const during = await createTestApp({ KEY_ENCRYPTION_KEY: K2, OLD_KEY_ENCRYPTION_KEY: K1 }, db);
    try {
      expect(await publishedKids(during)).toEqual([kid]);
    } finally {
      await during.close();
    }

    const moved = reencrypt(db, { KEY_ENCRYPTION_KEY: K2, OLD_KEY_ENCRYPTION_KEY: K1 });
    expect(moved.status, moved.output).toBe(0);
    expect(JSON.parse(moved.lines[0])).toEqual({
      reencrypted: 1,
      alreadySealed: 0,
      keyEncryptionKeyId: expect.stringMatching(/^[0-9a-f]{16}$/),
      resealed: { totpSecrets: 1, recoveryCodeKey: 1 },
    });
    expect(reencrypt(db, { KEY_ENCRYPTION_KEY: K2 }).lines[0]).toContain('"reencrypted":0');

    const after = await createTestApp({ KEY_ENCRYPTION_KEY: K2 }, db);
    try {
      expect(await publishedKids(after)).toEqual([kid]);
      // The authenticator's secret opens under the new key alone: its current code confirms it.
      const codes = await after.app.get(SecondFactorsService).confirmTotp(totp.userId, totpCode(totp.secret, Date.now()), NO_REQUEST);
      expect(codes).toHaveLength(10);
    } finally {
      await after.close();
    }
    await expect(createTestApp({ KEY_ENCRYPTION_KEY: K1 }, db)).rejects.toThrow(/another key-encryption key/);
  });

  it('keys stored in plain (no key-encryption key yet) are sealed by keys:reencrypt; without a key it refuses', async () => {
    const db = await database();
    const plain = await createTestApp({}, db);
    try {
      expect((await storedKeys(plain))[0].private_jwk).toMatch(/^\{/);
    } finally {
      await plain.close();
    }
    const refused = reencrypt(db, {});
    expect(refused.status).toBe(1);
    expect(refused.lines).toEqual([expect.stringMatching(/^error: KEY_ENCRYPTION_KEY is not set/)]);

    const sealed = reencrypt(db, { KEY_ENCRYPTION_KEY: K1 });
    expect(sealed.status, sealed.output).toBe(0);
    expect(JSON.parse(sealed.lines[0])).toMatchObject({ reencrypted: 1, alreadySealed: 0 });
    const t = await createTestApp({ KEY_ENCRYPTION_KEY: K1 }, db);
    try {
      expect((await storedKeys(t))[0].private_jwk).toMatch(/^kek1\./);
      expect(await publishedKids(t)).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('the service refuses to start in production without one, in one line', () => {
    const { status, output } = runToExit({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://u@127.0.0.1:1/x',
      ISSUER: 'https://auth.example.com',
    });
    expect(status).not.toBe(0);
    expect(output.trim().split('\n')).toEqual([expect.stringContaining('KEY_ENCRYPTION_KEY is required')]);
  });
});
