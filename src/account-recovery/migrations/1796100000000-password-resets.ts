import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/**
 * Self-service password resets: one row per link sent, by the SHA-256 of its secret, going with its person; the
 * retention job deletes them once expired (the expiry index).
 */
export class PasswordResets1796100000000 implements MigrationInterface {
  name = 'PasswordResets1796100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'password_resets',
        columns: [
          { name: 'token_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'used_at', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [{ columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [
          { name: 'idx_password_resets_user', columnNames: ['user_id'] },
          { name: 'idx_password_resets_expires', columnNames: ['expires_at'] },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('password_resets');
  }
}
