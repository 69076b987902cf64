import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { VIEWS_AFTER as CODE_ISSUE } from './1795500700000-openid-connect';

/**
 * `refresh_token_issue` and its trigger, as the audit module's first migration made them (the OpenID one kept them),
 * written out: a migration does not depend on another module's files.
 */
const REFRESH_TOKEN_ISSUE = [
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

/**
 * SQLite: the audited-write views go. A code's grant, the code and its event, and a refresh token and its event,
 * are now separate statements of one transaction (SqlRunner.atomic), as everywhere else; a table the views named
 * can be rebuilt by TypeORM again without a detour. PostgreSQL never had them.
 */
export class DropAuditedWriteViews1795700000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') return;
    await q.query(`DROP VIEW IF EXISTS refresh_token_issue`);
    await q.query(`DROP VIEW IF EXISTS code_issue`);
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') return;
    for (const statement of [...CODE_ISSUE, ...REFRESH_TOKEN_ISSUE]) await q.query(statement);
  }
}
