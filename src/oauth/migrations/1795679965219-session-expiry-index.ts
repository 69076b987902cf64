import { type MigrationInterface, type QueryRunner, TableIndex } from 'typeorm';

/** Sessions by expiry: the retention job deletes expired ones a batch at a time (RetentionService). */
export class SessionExpiryIndex1795679965219 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex('sessions', new TableIndex({ name: 'idx_sessions_expires', columnNames: ['expires_at'] }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('sessions', 'idx_sessions_expires');
  }
}
