import type { QueryRunner } from 'typeorm';

/**
 * SQLite only: the views whose INSTEAD OF INSERT triggers write a change and its audit event in one statement
 * (see the audit-events migration). SQLite refuses to rename a table over a dropped one while a view names it,
 * which is how TypeORM rebuilds a table there (addColumn, changeColumn, dropColumn, foreign-key changes): a
 * migration that changes `grants`, `authorization_codes`, `refresh_tokens` or `audit_events` that way runs inside
 * {@link withoutAuditedWriteViews}.
 */
const VIEWS = [
  `CREATE VIEW code_issue AS SELECT
     g.id AS grant_id, g.user_id, g.client_id, g.scope, g.resources, g.created_at, g.expires_at AS grant_expires_at,
     c.code_hash, c.redirect_uri, c.code_challenge, c.expires_at AS code_expires_at,
     a.id AS audit_id, a.actor, a.address, a.request_id, a.details
   FROM grants g, authorization_codes c, audit_events a WHERE 0`,
  `CREATE TRIGGER code_issue_insert INSTEAD OF INSERT ON code_issue BEGIN
     INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at)
     VALUES (NEW.grant_id, NEW.user_id, NEW.client_id, NEW.scope, NEW.resources, NEW.created_at, NEW.grant_expires_at, NULL);
     INSERT INTO authorization_codes
       (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at)
     VALUES (NEW.code_hash, NEW.grant_id, NEW.client_id, NEW.user_id, NEW.redirect_uri, NEW.scope, NEW.code_challenge,
       NEW.created_at, NEW.code_expires_at, NULL);
     INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)
     VALUES (NEW.audit_id, NEW.created_at, 'code.issued', NEW.actor, NEW.user_id, NEW.client_id, NEW.address,
       NEW.request_id, NEW.details);
   END`,
  `CREATE VIEW refresh_token_issue AS SELECT
     r.token_hash, r.grant_id, r.client_id, r.user_id, r.scope, r.created_at, r.expires_at,
     a.id AS audit_id, a.type AS audit_type, a.actor, a.address, a.request_id, a.details
   FROM refresh_tokens r, audit_events a WHERE 0`,
  `CREATE TRIGGER refresh_token_issue_insert INSTEAD OF INSERT ON refresh_token_issue BEGIN
     INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at)
     VALUES (NEW.token_hash, NEW.grant_id, NEW.client_id, NEW.user_id, NEW.scope, NEW.created_at, NEW.expires_at, NULL);
     INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)
     VALUES (NEW.audit_id, NEW.created_at, NEW.audit_type, NEW.actor, NEW.user_id, NEW.client_id, NEW.address,
       NEW.request_id, NEW.details);
   END`,
];

const sqlite = (q: QueryRunner) => q.connection.options.type !== 'postgres';

export async function createAuditedWriteViews(q: QueryRunner): Promise<void> {
  if (!sqlite(q)) return;
  for (const statement of VIEWS) await q.query(statement);
}

/** Drops the views (their triggers go with them). */
export async function dropAuditedWriteViews(q: QueryRunner): Promise<void> {
  if (!sqlite(q)) return;
  await q.query(`DROP VIEW IF EXISTS refresh_token_issue`);
  await q.query(`DROP VIEW IF EXISTS code_issue`);
}

/** Runs `change` (which may rebuild the tables the views name) without the views, and puts them back after. */
export async function withoutAuditedWriteViews(q: QueryRunner, change: () => Promise<void>): Promise<void> {
  await dropAuditedWriteViews(q);
  await change();
  await createAuditedWriteViews(q);
}
