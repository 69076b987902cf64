import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

const userFk = { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' };
const clientFk = { columnNames: ['client_id'], referencedTableName: 'clients', referencedColumnNames: ['id'], onDelete: 'CASCADE' };
const grantFk = { columnNames: ['grant_id'], referencedTableName: 'grants', referencedColumnNames: ['id'], onDelete: 'CASCADE' };

/** Clients, login sessions, grants, authorization codes, refresh tokens and consents. Secrets are stored as hashes. */
export class AuthorizationServer1732240100000 implements MigrationInterface {
  name = 'AuthorizationServer1732240100000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'clients',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'secret_hash', type: 'varchar', length: '64', isNullable: true },
          { name: 'name', type: 'varchar', length: '100' },
          { name: 'redirect_uris', type: 'text' },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'is_public', type: 'boolean' },
          { name: 'trusted', type: 'boolean' },
          { name: 'created_at', type: 'bigint' },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'sessions',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'csrf_token', type: 'varchar', length: '64' },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
        ],
        foreignKeys: [userFk],
        indices: [{ name: 'idx_sessions_user', columnNames: ['user_id'] }],
      }),
    );
    await q.createTable(
      new Table({
        name: 'grants',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'client_id', type: 'varchar', length: '64' },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'revoked_at', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [userFk, clientFk],
        indices: [
          { name: 'idx_grants_user', columnNames: ['user_id'] },
          { name: 'idx_grants_client', columnNames: ['client_id'] },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'authorization_codes',
        columns: [
          { name: 'code_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'grant_id', type: 'varchar', length: '36' },
          { name: 'client_id', type: 'varchar', length: '64' },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'redirect_uri', type: 'text', isNullable: true },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'code_challenge', type: 'varchar', length: '128', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'consumed_at', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [grantFk],
        indices: [
          { name: 'idx_codes_grant', columnNames: ['grant_id'] },
          { name: 'idx_codes_expires', columnNames: ['expires_at'] },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'refresh_tokens',
        columns: [
          { name: 'token_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'grant_id', type: 'varchar', length: '36' },
          { name: 'client_id', type: 'varchar', length: '64' },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'created_at', type: 'bigint' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'rotated_at', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [grantFk],
        indices: [{ name: 'idx_refresh_grant', columnNames: ['grant_id'] }],
      }),
    );
    await q.createTable(
      new Table({
        name: 'consents',
        columns: [
          { name: 'user_id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'client_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'scope', type: 'varchar', length: '200' },
          { name: 'updated_at', type: 'bigint' },
        ],
        foreignKeys: [userFk, clientFk],
      }),
    );
    await q.createIndex('grants', new TableIndex({ name: 'idx_grants_expires', columnNames: ['expires_at'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['consents', 'refresh_tokens', 'authorization_codes', 'grants', 'sessions', 'clients']) {
      await q.dropTable(table);
    }
  }
}
