import { type MigrationInterface, type QueryRunner, TableIndex } from 'typeorm';

/**
 * The revoked list read from a cursor instead of a time window read again: `change_seq` orders the entries as
 * their writes committed (then `revoked_at`, so that the rows of one large write are read in about the order they
 * were stored in). PostgreSQL: the id of the writing transaction (`pg_current_xact_id()`; a reader takes
 * only what no running transaction can still add below). SQLite, one writer at a time: one more than the highest.
 */
export class RevokedListCursor1795935215942 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    // The writes set it (the repository's upsert); the entries already there are numbered here.
    await queryRunner.query(`ALTER TABLE "revoked_grants" ADD COLUMN "change_seq" bigint NOT NULL DEFAULT 0`);
    const postgres = queryRunner.connection.options.type === 'postgres';
    await queryRunner.query(`UPDATE "revoked_grants" SET "change_seq" = ${postgres ? 'pg_current_xact_id()::text::bigint' : 'rowid'}`);
    await queryRunner.createIndex(
      'revoked_grants',
      new TableIndex({ name: 'idx_revoked_grants_change_seq', columnNames: ['change_seq', 'revoked_at', 'grant_id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('revoked_grants', 'idx_revoked_grants_change_seq');
    await queryRunner.dropColumn('revoked_grants', 'change_seq');
  }
}
