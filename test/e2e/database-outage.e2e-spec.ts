import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderBody } from '../support/factories';
import { ThrowawayPostgres } from '../support/throwaway-postgres';
import { type TestApp, createTestApp } from '../support/test-app';

/** A restarted database is survived without restarting the service, and nothing acknowledged is lost. */
describe('a PostgreSQL outage', () => {
  let pg: ThrowawayPostgres;
  let t: TestApp;

  beforeAll(async () => {
    pg = await ThrowawayPostgres.launch();
    t = await createTestApp({}, { url: pg.url, drop: async () => undefined });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    pg?.destroy();
  });

  it('answers 503 while the database is down and normally once it is back, without losing acknowledged writes', async () => {
    const user = await t.createUser();
    const token = await t.token(user.id);
    const created = [];
    for (let i = 0; i < 5; i++) {
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set('Authorization', `Bearer ${token}`)
        .send(orderBody({ item: `before outage ${i}` }));
      expect(res.status).toBe(201);
      created.push(res.body.id as string);
    }

    pg.stop();

    const started = Date.now();
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(503);
    const read = await t.http().get(`/users/${user.id}`).set('Authorization', `Bearer ${token}`);
    expect(read.status).toBe(503);
    expect(read.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(read.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
    const write = await t
      .http()
      .post(`/users/${user.id}/orders`)
      .set('Authorization', `Bearer ${token}`)
      .send(orderBody({ item: 'during outage' }));
    expect(write.status).toBe(503);
    // Token checks need no database: the resource server still answers.
    expect((await t.http().get('/api/resource').set('Authorization', `Bearer ${token}`)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(15_000);

    pg.start();

    let back = 0;
    for (let i = 0; i < 50 && back !== 200; i++) {
      back = (await t.http().get('/health/ready')).status;
      if (back !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(back).toBe(200);
    const list = await t.http().get(`/users/${user.id}/orders?limit=100`).set('Authorization', `Bearer ${token}`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((o: { id: string }) => o.id).sort()).toEqual([...created].sort());
    const after = await t
      .http()
      .post(`/users/${user.id}/orders`)
      .set('Authorization', `Bearer ${token}`)
      .send(orderBody({ item: 'after outage' }));
    expect(after.status).toBe(201);
  }, 180_000);
});
