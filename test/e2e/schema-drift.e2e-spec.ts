import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app-config';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { type TestApp, createTestApp, createTestDatabase } from '../support/test-app';

/** An index as the database has it or as an entity declares it, in one comparable line. */
function indexLine(table: string, name: string, columns: string[], unique: boolean, where: string | null | undefined): string {
  // PostgreSQL hands a condition back as `(consumed_at IS NULL)`, SQLite as written (`"consumed_at" IS NULL`).
  const condition = (where ?? '').replace(/["()]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();
  return `${table}.${name} (${columns.join(', ')})${unique ? ' unique' : ''}${condition ? ` where ${condition}` : ''}`;
}

interface IndexRow {
  table: string;
  name: string;
  unique: boolean | number;
  columns: string;
  where: string | null;
}

/**
 * The indexes of the database (not those behind a primary key or a unique constraint), their columns in index
 * order: read from the catalogs, as TypeORM's reader gives PostgreSQL's columns in table order.
 */
const INDEXES = {
  postgres: `
    SELECT t.relname AS "table", i.relname AS name, x.indisunique AS "unique", pg_get_expr(x.indpred, x.indrelid) AS "where",
      array_to_string(ARRAY(
        SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum ORDER BY k.n), ',') AS columns
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace s ON s.oid = t.relnamespace
    WHERE s.nspname = current_schema() AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
  sqlite: `
    SELECT m.tbl_name AS "table", m.name AS name, l."unique" AS "unique",
      substr(m.sql, nullif(instr(upper(m.sql), ' WHERE '), 0) + 7) AS "where",
      (SELECT group_concat(name, ',') FROM (SELECT c.name FROM pragma_index_info(m.name) c ORDER BY c.seqno)) AS columns
    FROM sqlite_master m JOIN pragma_index_list(m.tbl_name) l ON l.name = m.name
    WHERE m.type = 'index' AND m.sql IS NOT NULL`,
};

/**
 * The entities and the migrations describe one schema: after the migrations have run on a fresh database, TypeORM's
 * schema builder finds nothing to change (no table, column, key, unique, index or foreign key), every table has an
 * entity, and every index is declared with its columns in the same order and the same condition (two things the
 * builder does not compare). The suite runs on SQLite and on PostgreSQL.
 */
describe('entities and migrations', () => {
  let t: TestApp;
  let dataSource: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const entityTables = () => dataSource.entityMetadatas.map((entity) => entity.tableName).sort();

  it('leave the schema builder nothing to change', async () => {
    const { upQueries } = await dataSource.driver.createSchemaBuilder().log();
    expect(upQueries.map((query) => query.query)).toEqual([]);
  });

  it('give every table an entity', async () => {
    const rows: { name: string }[] = await dataSource.query(
      dataSource.options.type === 'postgres'
        ? `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
        : `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
    );
    const migrationsTable = dataSource.options.migrationsTableName ?? 'migrations';
    const tables = rows.map((row) => row.name).filter((name) => name !== migrationsTable);
    expect(tables.sort()).toEqual(entityTables());
  });

  it('declare every index with the columns, order and condition the migrations gave it', async () => {
    const rows: IndexRow[] = await dataSource.query(dataSource.options.type === 'postgres' ? INDEXES.postgres : INDEXES.sqlite);
    const inDatabase = rows.map((row) => indexLine(row.table, row.name, row.columns.split(','), !!row.unique, row.where));
    const declared = dataSource.entityMetadatas.flatMap((entity) =>
      entity.indices.map((index) =>
        indexLine(
          entity.tableName,
          index.name,
          index.columns.map((column) => column.databaseName),
          index.isUnique,
          index.where,
        ),
      ),
    );
    expect(declared.sort()).toEqual(inDatabase.sort());
  });
});

/** One row in each table the migration rebuilds on SQLite (and whatever those rows need). */
const ROWS = [
  `INSERT INTO users (id, email, email_normalized, password_hash, name, gender, age, role, created_at, updated_at)
   VALUES ('u1', 'a@example.com', 'a@example.com', 'x', 'A', 'other', 30, 'user', 1, 1)`,
  `INSERT INTO clients (id, name, redirect_uris, scope, is_public, trusted, created_at)
   VALUES ('https://client.example/metadata.json', 'C', '[]', 'openid users:read', false, false, 1)`,
  `INSERT INTO grants (id, user_id, client_id, scope, created_at, expires_at)
   VALUES ('g1', 'u1', 'https://client.example/metadata.json', 'openid', 1, 2)`,
  `INSERT INTO authorization_codes (code_hash, grant_id, client_id, user_id, scope, created_at, expires_at)
   VALUES ('c1', 'g1', 'https://client.example/metadata.json', 'u1', 'openid', 1, 2)`,
  `INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at)
   VALUES ('r1', 'g1', 'https://client.example/metadata.json', 'u1', 'openid', 1, 2)`,
  `INSERT INTO consents (user_id, client_id, scope, updated_at) VALUES ('u1', 'https://client.example/metadata.json', 'openid', 1)`,
  `INSERT INTO audit_events (id, at, type, actor) VALUES ('e1', 1, 'code.issued', 'client:https://client.example/metadata.json')`,
  `INSERT INTO revoked_grants (grant_id, revoked_at, expires_at) VALUES ('client:https://client.example/metadata.json', 1, 2)`,
];
const TABLES = ['clients', 'grants', 'authorization_codes', 'refresh_tokens', 'consents', 'audit_events', 'revoked_grants'];
/** The columns that PostgreSQL had widened and SQLite kept as first declared, until SqliteDeclaredTypes. */
const RETYPED_ON_SQLITE: Record<string, [before: string, after: string]> = {
  'clients.id': ['varchar(64)', 'varchar(255)'],
  'clients.scope': ['varchar(200)', 'text'],
  'grants.client_id': ['varchar(64)', 'varchar(255)'],
  'grants.scope': ['varchar(200)', 'text'],
  'authorization_codes.client_id': ['varchar(64)', 'varchar(255)'],
  'authorization_codes.scope': ['varchar(200)', 'text'],
  'refresh_tokens.client_id': ['varchar(64)', 'varchar(255)'],
  'refresh_tokens.scope': ['varchar(200)', 'text'],
  'consents.client_id': ['varchar(64)', 'varchar(255)'],
  'consents.scope': ['varchar(200)', 'text'],
  'audit_events.client_id': ['varchar(64)', 'varchar(255)'],
  'audit_events.actor': ['varchar(80)', 'varchar(300)'],
  'revoked_grants.grant_id': ['varchar(36)', 'varchar(300)'],
};

/**
 * SqliteDeclaredTypes rebuilds those tables on SQLite (PostgreSQL has the types already): undone and run again, every
 * row, index and foreign key stays, the declared types go back and forth, and the audit sequence goes on.
 */
describe('the migration that declares SQLite types as on PostgreSQL', () => {
  it('keeps every row and index, and its down puts the earlier types back', async () => {
    const db = await createTestDatabase();
    const dataSource = new DataSource(await dataSourceOptions(AppConfig.fromEnv({}, { DATABASE_URL: db.url })));
    await dataSource.initialize();
    const postgres = dataSource.options.type === 'postgres';
    const declared = async () => {
      const out: Record<string, string> = {};
      for (const key of Object.keys(RETYPED_ON_SQLITE)) {
        const [table, column] = key.split('.');
        const [row] = (await dataSource.query(
          postgres
            ? `SELECT CASE WHEN data_type = 'character varying' THEN 'varchar(' || character_maximum_length || ')' ELSE data_type END AS type
               FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${table}' AND column_name = '${column}'`
            : `SELECT lower(type) AS type FROM pragma_table_info('${table}') WHERE name = '${column}'`,
        )) as { type: string }[];
        out[key] = row.type;
      }
      return out;
    };
    const contents = async () => {
      const out: Record<string, unknown[]> = {};
      for (const table of TABLES) out[table] = await dataSource.query(`SELECT * FROM ${table}`);
      return out;
    };
    const indexes = async () =>
      ((await dataSource.query(postgres ? INDEXES.postgres : INDEXES.sqlite)) as IndexRow[]).map((row) => row.name).sort();
    const sides = (side: 0 | 1) => Object.fromEntries(Object.entries(RETYPED_ON_SQLITE).map(([key, types]) => [key, types[side]]));
    try {
      await dataSource.runMigrations();
      for (const statement of ROWS) await dataSource.query(statement);
      const [rows, indexNames] = [await contents(), await indexes()];
      expect(await declared()).toEqual(sides(1));

      const applied = async () => ((await dataSource.query('SELECT name FROM migrations')) as { name: string }[]).map((m) => m.name);
      while ((await applied()).includes('SqliteDeclaredTypes1795935519327')) await dataSource.undoLastMigration();
      expect(await declared()).toEqual(postgres ? sides(1) : sides(0));
      // Later migrations were undone too: the columns they add are gone, every other value stays.
      const undone = await contents();
      const kept = Object.fromEntries(
        Object.entries(rows).map(([table, all]) => [
          table,
          (all as Record<string, unknown>[]).map((row, i) =>
            Object.fromEntries(Object.keys((undone[table] as Record<string, unknown>[])[i] ?? row).map((key) => [key, row[key]])),
          ),
        ]),
      );
      expect(undone).toEqual(kept);

      await dataSource.runMigrations();
      expect(await declared()).toEqual(sides(1));
      expect(await contents()).toEqual(rows);
      expect(await indexes()).toEqual(indexNames);
      if (!postgres) expect(await dataSource.query('PRAGMA foreign_key_check')).toEqual([]);
      await dataSource.query(`INSERT INTO audit_events (id, at, type, actor) VALUES ('e2', 2, 'code.issued', 'client:x')`);
      const seqs = (await dataSource.query(`SELECT seq FROM audit_events ORDER BY seq`)) as { seq: string | number }[];
      expect(seqs.map((row) => Number(row.seq))).toEqual([1, 2]);
    } finally {
      await dataSource.destroy();
      await db.drop();
    }
  });
});
