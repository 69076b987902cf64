import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

const GENDERS = ['female', 'male', 'other'] as const;
type Gender = (typeof GENDERS)[number];

/**
 * `GET /users` answers `page.total` from counters that database triggers keep (statement-level on PostgreSQL, so a
 * bulk load runs one counter update per statement instead of one per row). These tests write many rows per
 * statement, as a bulk load or an operator's SQL would, and read the totals back through the API.
 */
describe('user counters under multi-row statements', () => {
  let t: TestApp;
  let db: DataSource;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp();
    db = t.app.get(DataSource);
    adminToken = await t.token((await t.createUser({ role: 'admin' })).id);
  });
  afterAll(() => t.close());

  async function totals(): Promise<Record<Gender, number>> {
    const out = {} as Record<Gender, number>;
    for (const gender of GENDERS) {
      const res = await t
        .http()
        .get(`/users?gender=${gender}&limit=1`)
        .set(...bearer(adminToken));
      expect(res.status).toBe(200);
      out[gender] = res.body.page.total;
    }
    return out;
  }

  async function countedInTable(): Promise<Record<Gender, number>> {
    const rows: { gender: Gender; n: string | number }[] = await db.query('SELECT gender, count(*) AS n FROM users GROUP BY gender');
    const out = { female: 0, male: 0, other: 0 };
    for (const row of rows) out[row.gender] = Number(row.n);
    return out;
  }

  /** One INSERT of several rows, with `genders` in order. */
  async function insertMany(genders: Gender[]): Promise<void> {
    const ids = genders.map(() => randomUUID());
    const postgres = db.options.type === 'postgres';
    let n = 0;
    const placeholder = () => (postgres ? `$${++n}` : '?');
    const values: unknown[] = [];
    const tuples = genders.map((gender, i) => {
      const email = `bulk-${ids[i]}@example.com`;
      values.push(ids[i], email, email, 'not-a-hash', `Bulk ${i}`, gender, 40, 'user', Date.now(), Date.now());
      return `(${Array.from({ length: 10 }, placeholder).join(', ')})`;
    });
    await db.query(
      `INSERT INTO users (id, email, email_normalized, password_hash, name, gender, age, role, created_at, updated_at) VALUES ${tuples.join(', ')}`,
      values,
    );
  }

  it('counts a multi-row insert, a multi-row gender change and a multi-row delete exactly', async () => {
    const before = await totals();
    expect(before).toEqual(await countedInTable());

    await insertMany(['female', 'female', 'male', 'other', 'other', 'other']);
    expect(await totals()).toEqual({ female: before.female + 2, male: before.male + 1, other: before.other + 3 });

    // Every bulk row becomes male in one statement, and unrelated columns of other rows change alongside.
    await db.query(`UPDATE users SET gender = 'male' WHERE email LIKE 'bulk-%'`);
    await db.query(`UPDATE users SET age = age WHERE email NOT LIKE 'bulk-%'`);
    expect(await totals()).toEqual({ female: before.female, male: before.male + 6, other: before.other });
    expect(await totals()).toEqual(await countedInTable());

    await db.query(`DELETE FROM users WHERE email LIKE 'bulk-%'`);
    expect(await totals()).toEqual(before);
  });

  it('keeps the counters exact for single-row writes through the API', async () => {
    const before = await totals();
    const user = await t.createUser({ gender: 'other' });
    expect(await totals()).toEqual({ ...before, other: before.other + 1 });
    const res = await t
      .http()
      .delete(`/users/${user.id}`)
      .set(...bearer(adminToken));
    expect(res.status).toBe(204);
    expect(await totals()).toEqual(before);
  });
});
