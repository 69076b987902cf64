import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/** SQLite: the views and their INSTEAD OF triggers, as this migration creates them. */
export const VIEWS = [
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

/**
 * The audit trail: one row per security event. No foreign keys (the trail outlives the users and clients it
 * names); indexed for the admin API's filters (time; a user's or a client's events over time).
 *
 * On SQLite, where a statement cannot write two tables, two views with INSTEAD OF INSERT triggers let the
 * hottest writes and their events go in one statement, atomically: `code_issue` (a grant, its code and the
 * `code.issued` event) and `refresh_token_issue` (a refresh token and the event that issued it). On PostgreSQL
 * the same writes are data-modifying CTEs, and these views do not exist. (A later migration that rebuilds one of
 * those tables on SQLite, as TypeORM's addColumn/changeColumn do, wraps its work in `withoutAuditedWriteViews`;
 * one that changes what they write drops and recreates them with its own definitions.)
 */
export class AuditEvents1795500400000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    const postgres = q.connection.options.type === 'postgres';
    await q.createTable(
      new Table({
        name: 'audit_events',
        columns: [
          // The order of insertion (events of the same millisecond sort by it); `id` is what the API shows.
          { name: 'seq', type: postgres ? 'bigint' : 'integer', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'id', type: 'varchar', length: '36' },
          { name: 'at', type: 'bigint' },
          { name: 'type', type: 'varchar', length: '40' },
          { name: 'actor', type: 'varchar', length: '80' },
          { name: 'user_id', type: 'varchar', length: '36', isNullable: true },
          { name: 'client_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'address', type: 'varchar', length: '64', isNullable: true },
          { name: 'request_id', type: 'varchar', length: '128', isNullable: true },
          { name: 'details', type: 'text', isNullable: true },
        ],
        indices: [
          { name: 'idx_audit_events_at', columnNames: ['at', 'seq'] },
          { name: 'idx_audit_events_user', columnNames: ['user_id', 'at', 'seq'] },
          { name: 'idx_audit_events_client', columnNames: ['client_id', 'at', 'seq'] },
        ],
      }),
    );
    if (postgres) return;
    for (const statement of VIEWS) await q.query(statement);
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'postgres') {
      await q.query(`DROP VIEW refresh_token_issue`);
      await q.query(`DROP VIEW code_issue`);
    }
    await q.dropTable('audit_events');
  }
}
