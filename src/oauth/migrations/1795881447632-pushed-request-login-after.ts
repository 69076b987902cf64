import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * When a pushed request's `prompt=login` or `max_age` sent the person to log in (epoch ms): from then on only a
 * login after that time answers it, on every visit of its `request_uri`. Null: no login asked for yet.
 */
export class PushedRequestLoginAfter1795881447632 implements MigrationInterface {
  name = 'PushedRequestLoginAfter1795881447632';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "pushed_requests" ADD COLUMN "login_after" bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "pushed_requests" DROP COLUMN "login_after"`);
  }
}
