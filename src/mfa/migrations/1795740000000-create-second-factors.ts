import { type MigrationInterface, type QueryRunner, Table, TableForeignKey, TableIndex } from 'typeorm';

const OF_USER = (table: string) =>
  new TableForeignKey({
    name: `fk_${table}_user`,
    columnNames: ['user_id'],
    referencedTableName: 'users',
    referencedColumnNames: ['id'],
    onDelete: 'CASCADE',
  });

/**
 * Second factors: a person's TOTP authenticator (its secret sealed like the signing keys, confirmed once a first
 * code matched, the last time step used, so that no code is accepted twice, and its wrong codes in a row, which
 * lock it for a while), their recovery codes (hashes only), and the sign-ins waiting for a second factor (the hash
 * of the cookie that names one, its tries).
 */
export class CreateSecondFactors1795740000000 implements MigrationInterface {
  name = 'CreateSecondFactors1795740000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'totp_factors',
        columns: [
          { name: 'user_id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'secret', type: 'text' },
          { name: 'created_at', type: 'bigint' },
          { name: 'confirmed_at', type: 'bigint', isNullable: true },
          { name: 'last_step', type: 'bigint', default: 0 },
          // Wrong codes in a row, whatever the sign-in, and until when every code is refused after too many.
          { name: 'failures', type: 'integer', default: 0 },
          { name: 'locked_until', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [OF_USER('totp_factors')],
      }),
    );
    await q.createTable(
      new Table({
        name: 'recovery_codes',
        columns: [
          { name: 'code_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'created_at', type: 'bigint' },
          { name: 'used_at', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [OF_USER('recovery_codes')],
      }),
    );
    await q.createIndex('recovery_codes', new TableIndex({ name: 'idx_recovery_codes_user', columnNames: ['user_id'] }));
    await q.createTable(
      new Table({
        name: 'login_challenges',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'return_to', type: 'text' },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'tries', type: 'integer', default: 0 },
        ],
        foreignKeys: [OF_USER('login_challenges')],
      }),
    );
    await q.createIndex('login_challenges', new TableIndex({ name: 'idx_login_challenges_user', columnNames: ['user_id'] }));
    // The retention job deletes the expired ones by this.
    await q.createIndex('login_challenges', new TableIndex({ name: 'idx_login_challenges_expires', columnNames: ['expires_at'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('login_challenges');
    await q.dropTable('recovery_codes');
    await q.dropTable('totp_factors');
  }
}
