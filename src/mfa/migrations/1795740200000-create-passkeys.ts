import { type MigrationInterface, type QueryRunner, Table, TableForeignKey, TableIndex } from 'typeorm';

/**
 * Passkeys (WebAuthn credentials): a person's public keys, each with its name, sign counter and backup flags; and
 * the challenges handed to browsers, each named by the hash of the cookie of the browser it was handed to, taken
 * once by the statement that checks an answer (so on any instance, never twice).
 */
export class CreatePasskeys1795740200000 implements MigrationInterface {
  name = 'CreatePasskeys1795740200000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'passkeys',
        columns: [
          // The credential id (base64url), as the authenticator returns it.
          { name: 'id', type: 'varchar', length: '1400', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'name', type: 'varchar', length: '64' },
          // The COSE public key (base64url).
          { name: 'public_key', type: 'text' },
          { name: 'sign_count', type: 'bigint', default: 0 },
          { name: 'transports', type: 'varchar', length: '200', default: "''" },
          { name: 'aaguid', type: 'varchar', length: '36' },
          // `multiDevice` (synced, e.g. through a password manager) or `singleDevice` (bound to one authenticator).
          { name: 'device_type', type: 'varchar', length: '16' },
          { name: 'backed_up', type: 'boolean', default: false },
          { name: 'created_at', type: 'bigint' },
          { name: 'last_used_at', type: 'bigint', isNullable: true },
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'fk_passkeys_user',
            columnNames: ['user_id'],
            referencedTableName: 'users',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
          }),
        ],
      }),
    );
    await q.createIndex('passkeys', new TableIndex({ name: 'idx_passkeys_user', columnNames: ['user_id'] }));
    await q.createTable(
      new Table({
        name: 'webauthn_challenges',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'challenge', type: 'varchar', length: '128' },
          // `register` (account page), `sign-in` (a passkey alone) or `second-factor` (after the password).
          { name: 'purpose', type: 'varchar', length: '16' },
          { name: 'user_id', type: 'varchar', length: '36', isNullable: true },
          { name: 'expires_at', type: 'bigint' },
        ],
      }),
    );
    // The retention job deletes the expired ones by this.
    await q.createIndex('webauthn_challenges', new TableIndex({ name: 'idx_webauthn_challenges_expires', columnNames: ['expires_at'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('webauthn_challenges');
    await q.dropTable('passkeys');
  }
}
