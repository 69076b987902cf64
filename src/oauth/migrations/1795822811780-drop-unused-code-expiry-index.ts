import { type MigrationInterface, type QueryRunner, TableIndex } from 'typeorm';

/**
 * `idx_codes_expires` goes: no statement reads codes by expiry alone since the retention job deletes expired codes
 * through `idx_codes_unredeemed_expires` (and redeemed ones by their grant), yet every code issued, and every code
 * redeemed (a new row version: `consumed_at` is in that partial index's predicate), wrote an entry in it.
 */
export class DropUnusedCodeExpiryIndex1795822811780 implements MigrationInterface {
  name = 'DropUnusedCodeExpiryIndex1795822811780';

  async up(q: QueryRunner): Promise<void> {
    await q.dropIndex('authorization_codes', 'idx_codes_expires');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.createIndex('authorization_codes', new TableIndex({ name: 'idx_codes_expires', columnNames: ['expires_at'] }));
  }
}
