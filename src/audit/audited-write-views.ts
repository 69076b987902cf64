import type { QueryRunner } from 'typeorm';

/**
 * SQLite only: the views whose INSTEAD OF INSERT triggers write a change and its audit event in one statement
 * (created by the audit-events migration; a later migration that changes what they write drops and recreates them
 * with its own definitions). SQLite refuses to rename a table over a dropped one while a view names it, which is
 * how TypeORM rebuilds a table there (addColumn, changeColumn, dropColumn, foreign-key changes): a migration that
 * changes `grants`, `authorization_codes`, `refresh_tokens` or `audit_events` that way runs inside
 * {@link withoutAuditedWriteViews}.
 */
export const AUDITED_WRITE_VIEWS = ['code_issue', 'refresh_token_issue'];

const sqlite = (q: QueryRunner) => q.connection.options.type !== 'postgres';

/**
 * Runs `change` (which may rebuild the tables the views name) without the views, and puts them back after as they
 * were (their definitions and their triggers' read from the schema first).
 */
export async function withoutAuditedWriteViews(q: QueryRunner, change: () => Promise<void>): Promise<void> {
  if (!sqlite(q)) return change();
  const names = AUDITED_WRITE_VIEWS.map((name) => `'${name}'`).join(', ');
  const definitions = (await q.query(
    `SELECT sql FROM sqlite_master WHERE (type = 'view' AND name IN (${names})) OR (type = 'trigger' AND tbl_name IN (${names}))
     ORDER BY CASE type WHEN 'view' THEN 0 ELSE 1 END`,
  )) as { sql: string }[];
  for (const name of AUDITED_WRITE_VIEWS) await q.query(`DROP VIEW IF EXISTS ${name}`);
  await change();
  for (const { sql } of definitions) await q.query(sql);
}
