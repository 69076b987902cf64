import { type MigrationInterface, type QueryRunner } from 'typeorm';
import { VIEWS_AFTER as CODE_ISSUE } from './1795500700000-openid-connect';
import { VIEWS as FIRST_VIEWS } from '../../audit/migrations/1795500400000-audit-events';

/** `refresh_token_issue` and its trigger, as the audit-events migration made them (the OpenID one kept them). */
const REFRESH_TOKEN_ISSUE = FIRST_VIEWS.filter((statement) => statement.includes(' refresh_token_issue '));

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
