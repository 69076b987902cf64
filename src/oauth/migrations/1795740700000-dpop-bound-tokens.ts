import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * DPoP (RFC 9449): a client may be required to bind its access tokens to a key (`dpop_bound_access_tokens`, 5.2),
 * a public client's refresh tokens are bound to the key they were issued for (the thumbprint, `jkt`, 5.0), and an
 * authorization code may be bound to a key (`dpop_jkt`, 10).
 * Plain `ADD COLUMN`s: no table rebuild on SQLite.
 */
export class DpopBoundTokens1795740700000 implements MigrationInterface {
  name = 'DpopBoundTokens1795740700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "clients" ADD COLUMN "dpop_bound_access_tokens" boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE "refresh_tokens" ADD COLUMN "dpop_jkt" varchar(64)`);
    await q.query(`ALTER TABLE "authorization_codes" ADD COLUMN "dpop_jkt" varchar(64)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "authorization_codes" DROP COLUMN "dpop_jkt"`);
    await q.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "dpop_jkt"`);
    await q.query(`ALTER TABLE "clients" DROP COLUMN "dpop_bound_access_tokens"`);
  }
}
