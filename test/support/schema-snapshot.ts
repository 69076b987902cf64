import type { DataSource } from 'typeorm';

/**
 * A database's schema as plain data, for deep equality: every table with its columns in order (type, nullability,
 * default), its primary key, unique and foreign keys and its indexes (columns, order, condition), and the views,
 * triggers, functions and sequences. Read from the catalogs (sqlite_master and its pragmas on SQLite,
 * information_schema and pg_catalog on PostgreSQL), not from TypeORM's reader. The text of a definition (a view, a
 * trigger, a function, an index, a table on SQLite) has its runs of white space made one space: how a statement was indented is no part
 * of the schema.
 */
export interface SchemaSnapshot {
  tables: Record<string, TableSnapshot>;
  views: Record<string, string>;
  triggers: Record<string, string>;
  functions: Record<string, string>;
  sequences: Record<string, unknown>;
}

export interface TableSnapshot {
  /** In the table's order: `name type [not null] [default ...]`, and on SQLite the column's place in the key. */
  columns: string[];
  /** Constraints by name (PostgreSQL) or by what they are (SQLite, whose foreign keys have no name once created). */
  constraints: string[];
  /** Indexes by name, each with its definition (unique, columns, order, collation, condition). */
  indexes: Record<string, string>;
  /**
   * SQLite: the table's CREATE TABLE as the database keeps it, which alone shows what its pragmas do not (AUTOINCREMENT,
   * a CHECK, a column's collation, a constraint's name).
   */
  statement?: string;
}

/** The schema of `dataSource`'s database (its current schema on PostgreSQL). */
export function schemaOf(dataSource: DataSource): Promise<SchemaSnapshot> {
  return dataSource.options.type === 'postgres' ? postgresSchema(dataSource) : sqliteSchema(dataSource);
}

/** The tables of a snapshot besides TypeORM's own `migrations`: those of the application. */
export function applicationTables(snapshot: SchemaSnapshot, migrationsTable = 'migrations'): string[] {
  return Object.keys(snapshot.tables).filter((name) => name !== migrationsTable);
}

const oneLine = (sql: string | null): string => (sql ?? '').replace(/\s+/g, ' ').trim();

const sorted = <T>(entries: [string, T][]): Record<string, T> =>
  Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

async function sqliteSchema(dataSource: DataSource): Promise<SchemaSnapshot> {
  const objects = (await dataSource.query(
    `SELECT type, name, tbl_name AS "table", sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name`,
  )) as { type: string; name: string; table: string; sql: string | null }[];
  const ofType = (type: string) => objects.filter((object) => object.type === type);
  const tables: [string, TableSnapshot][] = [];
  for (const { name, sql } of ofType('table')) tables.push([name, { ...(await sqliteTable(dataSource, name)), statement: oneLine(sql) }]);
  return {
    tables: sorted(tables),
    views: sorted(ofType('view').map((view) => [view.name, oneLine(view.sql)])),
    triggers: sorted(ofType('trigger').map((trigger) => [trigger.name, `on ${trigger.table}: ${oneLine(trigger.sql)}`])),
    functions: {},
    sequences: {},
  };
}

async function sqliteTable(dataSource: DataSource, table: string): Promise<Omit<TableSnapshot, 'statement'>> {
  const columns = (await dataSource.query(`SELECT * FROM pragma_table_xinfo(?) ORDER BY cid`, [table])) as {
    name: string;
    type: string;
    notnull: number;
    dflt_value: string | null;
    pk: number;
    hidden: number;
  }[];
  const keys = (await dataSource.query(`SELECT * FROM pragma_foreign_key_list(?) ORDER BY id, seq`, [table])) as {
    id: number;
    table: string;
    from: string;
    to: string | null;
    on_update: string;
    on_delete: string;
    match: string;
  }[];
  const foreignKeys = new Map<number, typeof keys>();
  for (const key of keys) foreignKeys.set(key.id, [...(foreignKeys.get(key.id) ?? []), key]);
  const list = (await dataSource.query(`SELECT * FROM pragma_index_list(?)`, [table])) as {
    name: string;
    unique: number;
    origin: string;
    partial: number;
  }[];
  const indexes: [string, string][] = [];
  for (const index of list) {
    const parts = (await dataSource.query(`SELECT * FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno`, [index.name])) as {
      name: string | null;
      desc: number;
      coll: string;
    }[];
    const [row] = (await dataSource.query(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`, [index.name])) as {
      sql: string | null;
    }[];
    const sql = row?.sql;
    const on = parts.map((part) => `${part.name ?? '<expression>'}${part.desc ? ' desc' : ''} collate ${part.coll}`).join(', ');
    const where = sql ? / WHERE (.*)$/is.exec(oneLine(sql))?.[1] : undefined;
    // origin: `c` created by CREATE INDEX, `u` behind a UNIQUE constraint, `pk` behind the primary key.
    indexes.push([index.name, `${index.origin}${index.unique ? ' unique' : ''} (${on})${where ? ` where ${where}` : ''}`]);
  }
  return {
    columns: columns.map(
      (column) =>
        `${column.name} ${column.type.toLowerCase()}${column.notnull ? ' not null' : ''}` +
        `${column.dflt_value === null ? '' : ` default ${column.dflt_value}`}${column.pk ? ` key#${column.pk}` : ''}` +
        `${column.hidden ? ` hidden#${column.hidden}` : ''}`,
    ),
    constraints: [...foreignKeys.values()]
      .map(
        (parts) =>
          `foreign key (${parts.map((p) => p.from).join(', ')}) references ${parts[0].table} (${parts.map((p) => p.to ?? '').join(', ')})` +
          ` on update ${parts[0].on_update} on delete ${parts[0].on_delete} match ${parts[0].match}`,
      )
      .sort(),
    indexes: sorted(indexes),
  };
}

async function postgresSchema(dataSource: DataSource): Promise<SchemaSnapshot> {
  const query = async <T>(sql: string): Promise<T[]> => (await dataSource.query(sql)) as T[];
  const columns = await query<{ table: string; line: string }>(`
    SELECT c.table_name AS "table", concat_ws(' ', c.column_name, format_type(a.atttypid, a.atttypmod),
      CASE WHEN c.is_nullable = 'NO' THEN 'not null' END, 'default ' || c.column_default,
      CASE WHEN c.is_identity = 'YES' THEN 'identity ' || c.identity_generation END,
      CASE WHEN c.is_generated <> 'NEVER' THEN 'generated ' || c.generation_expression END,
      'collate ' || c.collation_name) AS line
    FROM information_schema.columns c
    JOIN pg_attribute a ON a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND a.attname = c.column_name
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
    ORDER BY c.table_name, c.ordinal_position`);
  const constraints = await query<{ table: string; line: string }>(`
    SELECT t.relname AS "table", k.conname || ': ' || pg_get_constraintdef(k.oid) AS line
    FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace s ON s.oid = t.relnamespace
    WHERE s.nspname = current_schema()`);
  const indexes = await query<{ table: string; name: string; definition: string }>(`
    SELECT tablename AS "table", indexname AS name, indexdef AS definition FROM pg_indexes WHERE schemaname = current_schema()`);
  const views = await query<{ name: string; definition: string }>(`
    SELECT viewname AS name, definition FROM pg_views WHERE schemaname = current_schema()
    UNION ALL SELECT matviewname, 'materialized: ' || definition FROM pg_matviews WHERE schemaname = current_schema()`);
  const triggers = await query<{ name: string; definition: string }>(`
    SELECT t.relname || '.' || g.tgname AS name, pg_get_triggerdef(g.oid) || CASE WHEN g.tgenabled = 'D' THEN ' (disabled)' ELSE '' END AS definition
    FROM pg_trigger g JOIN pg_class t ON t.oid = g.tgrelid JOIN pg_namespace s ON s.oid = t.relnamespace
    WHERE s.nspname = current_schema() AND NOT g.tgisinternal`);
  const functions = await query<{ name: string; definition: string }>(`
    SELECT p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS definition
    FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace WHERE s.nspname = current_schema()`);
  const sequences = await query<{ name: string; owner: string | null; data_type: string; start_value: string; increment: string }>(`
    SELECT q.sequence_name AS name, q.data_type, q.start_value, q.minimum_value, q.maximum_value, q.increment, q.cycle_option,
      (SELECT t.relname || '.' || a.attname FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.objid = format('%I.%I', q.sequence_schema, q.sequence_name)::regclass AND d.deptype IN ('a', 'i')) AS owner
    FROM information_schema.sequences q WHERE q.sequence_schema = current_schema()`);
  const tableNames = await query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  const of = <T extends { table: string }>(rows: T[], table: string) => rows.filter((row) => row.table === table);
  return {
    tables: sorted(
      tableNames.map(({ name }): [string, TableSnapshot] => [
        name,
        {
          columns: of(columns, name).map((row) => row.line),
          constraints: of(constraints, name)
            .map((row) => row.line)
            .sort(),
          indexes: sorted(of(indexes, name).map((row): [string, string] => [row.name, oneLine(row.definition)])),
        },
      ]),
    ),
    views: sorted(views.map((view): [string, string] => [view.name, oneLine(view.definition)])),
    triggers: sorted(triggers.map((trigger): [string, string] => [trigger.name, oneLine(trigger.definition)])),
    functions: sorted(functions.map((fn): [string, string] => [fn.name, oneLine(fn.definition)])),
    sequences: sorted(sequences.map(({ name, ...rest }): [string, unknown] => [name, rest])),
  };
}
