import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * RFC 8707 resource indicators: per client, the resources (besides this service's API, `AUDIENCE`) it may ask
 * tokens for, space-separated; per grant, the resources the authorization request named (NULL: none, so tokens
 * are for the API).
 */
export class ResourceIndicators1795500200000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "resources" text NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE "grants" ADD COLUMN "resources" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "grants" DROP COLUMN "resources"`);
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "resources"`);
  }
}
