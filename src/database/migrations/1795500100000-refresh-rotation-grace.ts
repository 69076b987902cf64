import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Refresh rotation grace: per client, the seconds in which the just-rotated refresh token still yields its one
 * successor (0: off); per rotated token, that successor sealed under the rotated token itself, so only whoever
 * presents it can open it (nothing in the table alone reveals a usable token).
 */
export class RefreshRotationGrace1795500100000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "refresh_grace_seconds" integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE "refresh_tokens" ADD COLUMN "successor_sealed" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "refresh_tokens" DROP COLUMN "successor_sealed"`);
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "refresh_grace_seconds"`);
  }
}
