import { DataSource, type MigrationInterface } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app-config';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { discoverMigrations } from '../../src/database/migrations';
import { type SchemaSnapshot, applicationTables, schemaOf } from '../support/schema-snapshot';
import { type TestDatabase, createTestDatabase } from '../support/test-app';

type MigrationClass = new () => MigrationInterface;

/** A migration's name as TypeORM records it (its `name`, else its class's), which ends in its timestamp. */
const nameOf = (migration: MigrationClass): string => new migration().name ?? migration.name;

/** Every migration of the service, in the order TypeORM runs them (the timestamps their names end in). */
async function inOrder(): Promise<MigrationClass[]> {
  const timestamp = (migration: MigrationClass) => Number(nameOf(migration).slice(-13));
  return (await discoverMigrations()).sort((a, b) => timestamp(a) - timestamp(b));
}

/**
 * Every migration's `down()` undoes its `up()` exactly, on SQLite and on PostgreSQL. The migrations run up one at a
 * time, the schema recorded after each (tables, columns with their types, nullability and defaults, keys,
 * constraints, indexes, views, triggers, functions, sequences: see `schemaOf`); then they are reverted one at a time,
 * and after each revert the schema is the one recorded before that migration ran, down to no table of the
 * application; then they all run up again, in one transaction as at start-up, to the same schema as the first time.
 */
describe.each([
  ['SQLite', () => createTestDatabase('')],
  ['PostgreSQL', () => createTestDatabase(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')],
])('the migrations on %s', (_name, database: () => Promise<TestDatabase>) => {
  let db: TestDatabase;
  let migrations: MigrationClass[];
  /** `recorded[k]`: the schema once the first `k` migrations have run. */
  const recorded: SchemaSnapshot[] = [];

  /** A data source on the test's database that knows the first `count` migrations (all by default). */
  const connect = async (count = migrations.length): Promise<DataSource> => {
    const options = await dataSourceOptions(AppConfig.fromEnv({}, { DATABASE_URL: db.url }));
    return new DataSource({ ...options, migrations: migrations.slice(0, count) }).initialize();
  };
  const executed = async (dataSource: DataSource): Promise<string[]> =>
    ((await dataSource.query('SELECT name FROM migrations ORDER BY id')) as { name: string }[]).map((row) => row.name);

  beforeAll(async () => {
    db = await database();
    migrations = await inOrder();
  });
  afterAll(() => db?.drop());

  it('run up one at a time, each on top of the ones before', async () => {
    for (let count = 0; count <= migrations.length; count++) {
      const dataSource = await connect(count);
      try {
        const ran = await dataSource.runMigrations({ transaction: 'each' });
        expect(ran.map((migration) => migration.name)).toEqual(count ? [nameOf(migrations[count - 1])] : []);
        // Also what creates TypeORM's `migrations` table before the first migration.
        expect(await dataSource.showMigrations()).toBe(false);
        recorded.push(await schemaOf(dataSource));
      } finally {
        await dataSource.destroy();
      }
    }
    expect(applicationTables(recorded[0])).toEqual([]);
    expect(applicationTables(recorded[migrations.length]).length).toBeGreaterThan(0);
  });

  it('are reverted one at a time, each down() leaving the schema as it was before its up()', async () => {
    const dataSource = await connect();
    try {
      for (let count = migrations.length; count > 0; count--) {
        const name = nameOf(migrations[count - 1]);
        expect((await executed(dataSource)).at(-1)).toBe(name);
        await dataSource.undoLastMigration({ transaction: 'each' });
        expect(await schemaOf(dataSource), `the schema after ${name}'s down()`).toEqual(recorded[count - 1]);
        expect(await dataSource.showMigrations()).toBe(true);
      }
      expect(await executed(dataSource)).toEqual([]);
      expect(applicationTables(await schemaOf(dataSource))).toEqual([]);
    } finally {
      await dataSource.destroy();
    }
  });

  it('then run up again, all in one transaction, to the schema they gave the first time', async () => {
    const dataSource = await connect();
    try {
      const ran = await dataSource.runMigrations({ transaction: 'all' });
      expect(ran.map((migration) => migration.name)).toEqual(migrations.map(nameOf));
      expect(await dataSource.showMigrations()).toBe(false);
      expect(await schemaOf(dataSource)).toEqual(recorded[migrations.length]);
    } finally {
      await dataSource.destroy();
    }
  });
});
