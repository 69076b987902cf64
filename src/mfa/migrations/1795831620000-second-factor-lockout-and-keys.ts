import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/**
 * Second factors, hardened: an authenticator counts its locks in a row (after too many it stays locked until a
 * recovery code is used); a sign-in that sets up an authenticator (MFA_REQUIRED_ROLES) keeps that authenticator's
 * secret, sealed, so that no other sign-in shows it; and the service's own keys (the recovery codes' HMAC key,
 * sealed like the authenticator secrets).
 */
export class SecondFactorLockoutAndKeys1795831620000 implements MigrationInterface {
  name = 'SecondFactorLockoutAndKeys1795831620000';

  async up(q: QueryRunner): Promise<void> {
    // Plain ALTERs, as the earlier step-up migration: SQLite's addColumn would rebuild the tables from a cached copy.
    await q.query(`ALTER TABLE "totp_factors" ADD COLUMN "locks" integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE "login_challenges" ADD COLUMN "totp_secret" text`);
    await q.createTable(
      new Table({
        name: 'mfa_keys',
        columns: [
          { name: 'name', type: 'varchar', length: '64', isPrimary: true },
          { name: 'secret', type: 'text' },
          { name: 'created_at', type: 'bigint' },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('mfa_keys');
    await q.query(`ALTER TABLE "login_challenges" DROP COLUMN "totp_secret"`);
    await q.query(`ALTER TABLE "totp_factors" DROP COLUMN "locks"`);
  }
}
