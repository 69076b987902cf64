import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';
import { createAuditedWriteViews, dropAuditedWriteViews } from '../audited-write-views';

/**
 * The audit trail: one row per security event. No foreign keys (the trail outlives the users and clients it
 * names); indexed for the admin API's filters (time; a user's or a client's events over time).
 *
 * On SQLite, where a statement cannot write two tables, two views with INSTEAD OF INSERT triggers let the
 * hottest writes and their events go in one statement, atomically: `code_issue` (a grant, its code and the
 * `code.issued` event) and `refresh_token_issue` (a refresh token and the event that issued it). On PostgreSQL
 * the same writes are data-modifying CTEs, and these views do not exist. (A later migration that rebuilds one of
 * those tables on SQLite, as TypeORM's addColumn/changeColumn do, wraps its work in `withoutAuditedWriteViews`.)
 */
export class AuditEvents1795500400000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'audit_events',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
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
          { name: 'idx_audit_events_at', columnNames: ['at'] },
          { name: 'idx_audit_events_user', columnNames: ['user_id', 'at'] },
          { name: 'idx_audit_events_client', columnNames: ['client_id', 'at'] },
        ],
      }),
    );
    await createAuditedWriteViews(q);
  }

  async down(q: QueryRunner): Promise<void> {
    await dropAuditedWriteViews(q);
    await q.dropTable('audit_events');
  }
}
