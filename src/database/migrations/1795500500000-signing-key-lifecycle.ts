import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** KEY_RETIREMENT_DAYS' default, in ms: how long the keys already replaced stay published after the migration. */
const RETIREMENT_MS = 14 * 86_400_000;

/**
 * Scheduled key rotation: each signing key's lifecycle on its row — when it signs from (`activates_at`), when it
 * stops (`retires_at`, its successor's activation), when it leaves the JWKS (`unpublishes_at`) and the state the
 * rotation check last recorded. Existing keys signed from their creation; each one but the newest retired when the
 * next one was created, and stays published for the default retirement (14 days) from then.
 */
export class SigningKeyLifecycle1795500500000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "signing_keys" ADD COLUMN "activates_at" bigint NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE "signing_keys" ADD COLUMN "retires_at" bigint`);
    await queryRunner.query(`ALTER TABLE "signing_keys" ADD COLUMN "unpublishes_at" bigint`);
    await queryRunner.query(`ALTER TABLE "signing_keys" ADD COLUMN "state" varchar(16) NOT NULL DEFAULT 'active'`);
    await queryRunner.query(`UPDATE "signing_keys" SET "activates_at" = "created_at"`);
    // The order the keys were used in: newest first, and among keys created in the same millisecond the lower kid.
    await queryRunner.query(
      `UPDATE "signing_keys" SET "retires_at" = (
         SELECT MIN("newer"."created_at") FROM "signing_keys" "newer"
         WHERE "newer"."created_at" > "signing_keys"."created_at"
            OR ("newer"."created_at" = "signing_keys"."created_at" AND "newer"."kid" < "signing_keys"."kid"))`,
    );
    await queryRunner.query(
      `UPDATE "signing_keys" SET "unpublishes_at" = "retires_at" + ${RETIREMENT_MS}, "state" = 'retired' WHERE "retires_at" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP COLUMN "state"`);
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP COLUMN "unpublishes_at"`);
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP COLUMN "retires_at"`);
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP COLUMN "activates_at"`);
  }
}
