import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { DemoDataService } from '../../src/demo/demo-data.service';
import { type TestApp, createTestApp, createTestDatabase } from '../support/test-app';

describe('instances started together on an empty database', () => {
  it('three at once: every migration runs once, one signing key, the demo data seeded by exactly one', async () => {
    const db = await createTestDatabase();
    const apps: TestApp[] = [];
    try {
      const started = await Promise.allSettled([1, 2, 3].map(() => createTestApp({}, db)));
      for (const result of started) if (result.status === 'fulfilled') apps.push(result.value);
      expect(started.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);

      const dataSource = apps[0].app.get(DataSource);
      const ran = (await dataSource.query('SELECT name FROM migrations')) as { name: string }[];
      expect(ran.map((r) => r.name).sort()).toEqual(dataSource.migrations.map((m) => m.name ?? m.constructor.name).sort());
      expect(await dataSource.query('SELECT kid FROM signing_keys')).toHaveLength(1);

      const seeded = await Promise.all(apps.map((t) => t.app.get(DemoDataService).seedIfEmpty()));
      expect(seeded.filter((demo) => demo !== undefined)).toHaveLength(1);
      const admins = (await dataSource.query(`SELECT id FROM users WHERE email = 'admin@example.com'`)) as unknown[];
      expect(admins).toHaveLength(1);

      // Every instance serves, and signs with the one key.
      const jwks = await Promise.all(apps.map((t) => t.http().get('/.well-known/jwks.json')));
      for (const res of jwks)
        expect(res.body.keys.map((k: { kid: string }) => k.kid)).toEqual(jwks[0].body.keys.map((k: { kid: string }) => k.kid));
    } finally {
      await Promise.all(apps.map((t) => t.close()));
      await db.drop();
    }
  });
});
