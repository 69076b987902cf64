import { type MigrationInterface, type QueryRunner, TableIndex } from 'typeorm';

/**
 * The revoked list read incrementally: an index by `revoked_at` (then the id, the sync's page order), and room in
 * `grant_id` for the whole-subject entries (`client:<client id>`, `user:<user id>`), which a client id of up to
 * 255 characters needs. SQLite does not enforce a varchar's length.
 */
export class RevokedListSync1795678345757 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`ALTER TABLE "revoked_grants" ALTER COLUMN "grant_id" TYPE varchar(300)`);
    }
    await queryRunner.createIndex(
      'revoked_grants',
      new TableIndex({ name: 'idx_revoked_grants_revoked_at', columnNames: ['revoked_at', 'grant_id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('revoked_grants', 'idx_revoked_grants_revoked_at');
    if (queryRunner.connection.options.type === 'postgres') {
      // Not reversible for the entries longer than 36 characters (the whole-subject ones): the column of before
      // cannot hold them, and they go. The structure is back as it was before the migration.
      await queryRunner.query(`DELETE FROM "revoked_grants" WHERE length("grant_id") > 36`);
      await queryRunner.query(`ALTER TABLE "revoked_grants" ALTER COLUMN "grant_id" TYPE varchar(36)`);
    }
  }
}
