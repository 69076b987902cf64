import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * The device authorization grant (RFC 8628): each request by the hash of its device code, the hash of its user
 * code (unique while stored), its client, scope and resources, its state (`pending`, `approved`, `denied`,
 * `used`), the polling interval and the earliest next poll, and once approved the person and the grant.
 */
export class DeviceAuthorizations1795740800000 implements MigrationInterface {
  name = 'DeviceAuthorizations1795740800000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'device_authorizations',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'user_code_hash', type: 'varchar', length: '64', isUnique: true },
          { name: 'client_id', type: 'varchar', length: '255' },
          { name: 'scope', type: 'text' },
          { name: 'resources', type: 'text', isNullable: true },
          { name: 'status', type: 'varchar', length: '16' },
          { name: 'interval_seconds', type: 'integer' },
          { name: 'next_poll_at', type: 'bigint' },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'user_id', type: 'varchar', length: '36', isNullable: true },
          { name: 'grant_id', type: 'varchar', length: '36', isNullable: true },
        ],
        foreignKeys: [
          { columnNames: ['client_id'], referencedTableName: 'clients', referencedColumnNames: ['id'], onDelete: 'CASCADE' },
          { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' },
        ],
      }),
    );
    // The retention job deletes the expired ones by this.
    await q.createIndex(
      'device_authorizations',
      new TableIndex({ name: 'idx_device_authorizations_expires', columnNames: ['expires_at'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('device_authorizations');
  }
}
