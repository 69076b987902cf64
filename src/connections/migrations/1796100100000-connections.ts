import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

const connectionFk = {
  columnNames: ['connection_id'],
  referencedTableName: 'connections',
  referencedColumnNames: ['id'],
  onDelete: 'CASCADE',
};

/**
 * Company sign-in: the connections (upstream identity providers), the identities they vouch for (connection and
 * upstream subject → person), and the sign-ins on their way through one.
 */
export class Connections1796100100000 implements MigrationInterface {
  name = 'Connections1796100100000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'connections',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'name', type: 'varchar', length: '100' },
          { name: 'type', type: 'varchar', length: '16' },
          { name: 'issuer', type: 'varchar', length: '2048' },
          { name: 'client_id', type: 'varchar', length: '255' },
          { name: 'client_secret', type: 'text', isNullable: true },
          { name: 'domains', type: 'text' },
          { name: 'trust_upstream_mfa', type: 'boolean', default: false },
          { name: 'admin_groups', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'identities',
        columns: [
          { name: 'connection_id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'subject', type: 'varchar', length: '255', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'created_at', type: 'bigint' },
        ],
        foreignKeys: [
          connectionFk,
          { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' },
        ],
        indices: [{ name: 'idx_identities_user', columnNames: ['user_id'] }],
      }),
    );
    await q.createTable(
      new Table({
        name: 'connection_logins',
        columns: [
          { name: 'state_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'connection_id', type: 'varchar', length: '36' },
          { name: 'nonce', type: 'varchar', length: '64' },
          { name: 'code_verifier', type: 'text' },
          { name: 'return_to', type: 'text' },
          { name: 'expires_at', type: 'bigint' },
        ],
        foreignKeys: [connectionFk],
        indices: [{ name: 'idx_connection_logins_expires', columnNames: ['expires_at'] }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('connection_logins');
    await q.dropTable('identities');
    await q.dropTable('connections');
  }
}
