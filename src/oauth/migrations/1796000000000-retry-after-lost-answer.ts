import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Until when a rotated refresh token presented again gets its successor, and a redeemed code presented again gets
 * tokens (epoch ms), because the answer was lost with the database (it committed, and the client was answered
 * 503). Null: an ordinary rotation or redemption; 0 on a code: its retry was answered.
 */
export class RetryAfterLostAnswer1796000000000 implements MigrationInterface {
  name = 'RetryAfterLostAnswer1796000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "refresh_tokens" ADD COLUMN "retry_until" bigint`);
    await q.query(`ALTER TABLE "authorization_codes" ADD COLUMN "retry_until" bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "authorization_codes" DROP COLUMN "retry_until"`);
    await q.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "retry_until"`);
  }
}
