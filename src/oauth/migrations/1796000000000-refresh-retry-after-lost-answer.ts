import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Until when a rotated refresh token presented again gets its successor (epoch ms) because the rotation's answer
 * was lost with the database (it committed, and the client was answered 503). Null: an ordinary rotation.
 */
export class RefreshRetryAfterLostAnswer1796000000000 implements MigrationInterface {
  name = 'RefreshRetryAfterLostAnswer1796000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "refresh_tokens" ADD COLUMN "retry_until" bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "retry_until"`);
  }
}
