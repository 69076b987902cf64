import { type MigrationInterface, type QueryRunner, TableIndex } from 'typeorm';

/**
 * Codes never redeemed, by expiry: the retention job deletes them once expired (RetentionService); a redeemed code
 * stays with its grant, so that a replay is recognised (and revokes the grant) for as long as the grant lives.
 */
export class UnredeemedCodeExpiryIndex1795681436438 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex(
      'authorization_codes',
      new TableIndex({ name: 'idx_codes_unredeemed_expires', columnNames: ['expires_at'], where: '"consumed_at" IS NULL' }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('authorization_codes', 'idx_codes_unredeemed_expires');
  }
}
