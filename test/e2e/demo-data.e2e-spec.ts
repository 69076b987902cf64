import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DemoDataService } from '../../src/demo/demo-data.service';
import { UsersService } from '../../src/users/users.service';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

describe('demo data on an empty database (outside production)', () => {
  let t: TestApp;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp();
    const demo = await t.app.get(DemoDataService).seedIfEmpty();
    expect(demo?.adminEmail).toBe('admin@example.com');
    const row = await t.app.get(UsersService).credentials('admin@example.com');
    expect(row).toBeDefined();
    adminToken = await t.token(row!.id, ['users:read', 'orders:read']);
  });
  afterAll(() => t.close());

  it('shows a dozen people of each gender, sorted by age in the database', async () => {
    for (const gender of ['female', 'male', 'other']) {
      const res = await t
        .http()
        .get(`/users?gender=${gender}&sort=age&order=desc&limit=100`)
        .set(...bearer(adminToken));
      expect(res.status).toBe(200);
      const people = res.body.data.filter((u: { role: string }) => u.role === 'user');
      expect(people).toHaveLength(12);
      const ages = people.map((u: { age: number }) => u.age);
      expect(ages).toEqual([...ages].sort((a, b) => b - a));
      expect(new Set(ages).size).toBeGreaterThan(6);
    }
  });

  it('gives each of them one to three orders', async () => {
    const users = (
      await t
        .http()
        .get('/users?gender=male&limit=100')
        .set(...bearer(adminToken))
    ).body.data as { id: string }[];
    for (const user of users) {
      const orders = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...bearer(adminToken));
      expect(orders.status).toBe(200);
      expect(orders.body.data.length).toBeGreaterThanOrEqual(1);
      expect(orders.body.data.length).toBeLessThanOrEqual(3);
    }
  });

  it('seeds only once', async () => {
    expect(await t.app.get(DemoDataService).seedIfEmpty()).toBeUndefined();
  });
});
