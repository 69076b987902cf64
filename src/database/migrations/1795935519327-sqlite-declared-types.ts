import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** A column's declared type on SQLite: until this migration, and from it on (as on PostgreSQL). */
type Retyping = readonly [table: string, column: string, before: string, after: string];

/**
 * The columns that earlier migrations widened on PostgreSQL only (scopes as text, client ids of up to 255
 * characters, the audit actor, whole-subject entries of the revoked list), since SQLite does not enforce a declared
 * length.
 */
const RETYPED: readonly Retyping[] = [
  ['clients', 'id', 'varchar(64)', 'varchar(255)'],
  ['clients', 'scope', 'varchar(200)', 'text'],
  ['grants', 'client_id', 'varchar(64)', 'varchar(255)'],
  ['grants', 'scope', 'varchar(200)', 'text'],
  ['authorization_codes', 'client_id', 'varchar(64)', 'varchar(255)'],
  ['authorization_codes', 'scope', 'varchar(200)', 'text'],
  ['refresh_tokens', 'client_id', 'varchar(64)', 'varchar(255)'],
  ['refresh_tokens', 'scope', 'varchar(200)', 'text'],
  ['consents', 'client_id', 'varchar(64)', 'varchar(255)'],
  ['consents', 'scope', 'varchar(200)', 'text'],
  ['audit_events', 'client_id', 'varchar(64)', 'varchar(255)'],
  ['audit_events', 'actor', 'varchar(80)', 'varchar(300)'],
  ['revoked_grants', 'grant_id', 'varchar(36)', 'varchar(300)'],
];

/**
 * SQLite: those columns are declared as on PostgreSQL too, so that one set of entities describes the schema on both
 * databases (the schema-drift suite holds them together). SQLite cannot change a declared type in place: each table is
 * rebuilt (see `rebuild`). PostgreSQL has these types already.
 */
export class SqliteDeclaredTypes1795935519327 implements MigrationInterface {
  name = 'SqliteDeclaredTypes1795935519327';

  async up(q: QueryRunner): Promise<void> {
    await retype(q, RETYPED);
  }

  async down(q: QueryRunner): Promise<void> {
    await retype(
      q,
      RETYPED.map(([table, column, before, after]) => [table, column, after, before]),
    );
  }
}

async function retype(q: QueryRunner, changes: readonly Retyping[]): Promise<void> {
  if (q.connection.options.type === 'postgres') return;
  for (const table of new Set(changes.map(([name]) => name))) {
    const [{ sql }] = (await q.query(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, [table])) as { sql: string }[];
    let definition = replaceOnce(sql, `CREATE TABLE "${table}"`, `CREATE TABLE "rebuilt_${table}"`);
    for (const [, column, before, after] of changes.filter(([name]) => name === table)) {
      definition = replaceOnce(definition, `"${column}" ${before}`, `"${column}" ${after}`);
    }
    await rebuild(q, table, definition);
  }
}

/**
 * SQLite's procedure for what it cannot change in place: the table is created anew (as `rebuilt_<table>`, from
 * `definition`), gets the rows, replaces the old one and gets its indexes back. Where foreign keys are enforced
 * (TypeORM reverts a migration inside its transaction, where they cannot be turned off), dropping the old table would
 * delete by cascade every row that references it: those rows are kept aside, and put back once the table is rebuilt.
 */
async function rebuild(q: QueryRunner, table: string, definition: string): Promise<void> {
  const indexes = (await q.query(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`, [table])) as {
    sql: string;
  }[];
  const [{ foreign_keys: enforced }] = (await q.query('PRAGMA foreign_keys')) as { foreign_keys: number }[];
  const dependents = enforced ? await dependentsOf(q, table) : [];
  // Checked at the commit, when every row is back: the order in which they are set aside and put back is free.
  if (enforced) await q.query('PRAGMA defer_foreign_keys = ON');
  for (const name of dependents) await q.query(`CREATE TEMP TABLE "kept_${name}" AS SELECT * FROM "${name}"`);
  for (const name of dependents) await q.query(`DELETE FROM "${name}"`);
  await q.query(definition);
  await q.query(`INSERT INTO "rebuilt_${table}" SELECT * FROM "${table}"`);
  await q.query(`DROP TABLE "${table}"`);
  await q.query(`ALTER TABLE "rebuilt_${table}" RENAME TO "${table}"`);
  for (const index of indexes) await q.query(index.sql);
  for (const name of dependents) {
    await q.query(`INSERT INTO "${name}" SELECT * FROM "kept_${name}"`);
    await q.query(`DROP TABLE "kept_${name}"`);
  }
}

/** The tables whose foreign keys lead to `table`, directly or through one another. */
async function dependentsOf(q: QueryRunner, table: string): Promise<string[]> {
  const found: string[] = [];
  for (let next = [table]; next.length;) {
    const parent = next.shift()!;
    const rows = (await q.query(
      `SELECT DISTINCT m.name AS name FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table' AND f."table" = ?`,
      [parent],
    )) as { name: string }[];
    for (const { name } of rows) {
      if (name === table || found.includes(name)) continue;
      found.push(name);
      next.push(name);
    }
  }
  return found;
}

/** `text` with `from` replaced by `to`; `from` must be there (a table not as expected stops the migration). */
function replaceOnce(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`SqliteDeclaredTypes: expected ${from} in ${text}`);
  return text.replace(from, to);
}
