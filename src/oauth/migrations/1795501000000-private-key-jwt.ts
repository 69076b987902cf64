import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/**
 * `private_key_jwt` client authentication (RFC 7523 2.2, OpenID Connect Core 9): a client's public keys, inline
 * (`jwks`, a JWK Set as JSON) or by reference (`jwks_uri`), the one algorithm it registered (NULL: any supported),
 * and the ids (`jti`, as SHA-256) of the assertions already used, each kept until the assertion expires, so that
 * one presented again is refused by every instance. Plain `ADD COLUMN` and a new table: no table rebuild on SQLite.
 */
export class PrivateKeyJwt1795501000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "clients" ADD COLUMN "jwks" text`);
    await q.query(`ALTER TABLE "clients" ADD COLUMN "jwks_uri" text`);
    await q.query(`ALTER TABLE "clients" ADD COLUMN "token_endpoint_auth_signing_alg" varchar(16)`);
    await q.createTable(
      new Table({
        name: 'client_assertion_jtis',
        columns: [
          { name: 'client_id', type: 'varchar', length: '255', isPrimary: true },
          { name: 'jti_hash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'expires_at', type: 'bigint' },
        ],
        foreignKeys: [{ columnNames: ['client_id'], referencedTableName: 'clients', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
        indices: [{ name: 'idx_client_assertion_jtis_expires', columnNames: ['expires_at'] }],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('client_assertion_jtis');
    await q.query(`ALTER TABLE "clients" DROP COLUMN "token_endpoint_auth_signing_alg"`);
    await q.query(`ALTER TABLE "clients" DROP COLUMN "jwks_uri"`);
    await q.query(`ALTER TABLE "clients" DROP COLUMN "jwks"`);
  }
}
