import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The grants each client may use (space-separated `grant_type` values). Clients registered before keep what they
 * could do: the authorization-code grant with its refresh tokens.
 */
export class ClientGrantTypes1795500000000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "grant_types" text NOT NULL DEFAULT 'authorization_code refresh_token'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "grant_types"`);
  }
}
