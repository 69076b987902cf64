import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * How a person signed in (RFC 8176 `amr` values, space-separated: `pwd`, or `pwd otp mfa` with a second factor),
 * kept by the session and copied onto each grant issued in it, for the `amr` claim of its ID tokens. Rows from
 * before have none (the claim is left out).
 */
export class AuthenticationMethods1795740100000 implements MigrationInterface {
  name = 'AuthenticationMethods1795740100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "sessions" ADD COLUMN "amr" varchar(64)`);
    await q.query(`ALTER TABLE "grants" ADD COLUMN "amr" varchar(64)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "grants" DROP COLUMN "amr"`);
    await q.query(`ALTER TABLE "sessions" DROP COLUMN "amr"`);
  }
}
