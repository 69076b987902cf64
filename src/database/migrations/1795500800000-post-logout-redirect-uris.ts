import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * OpenID Connect RP-Initiated Logout 1.0: per client, the addresses it may have the browser sent back to after a
 * logout (`post_logout_redirect_uri`), space-separated; none for the clients registered before.
 */
export class PostLogoutRedirectUris1795500800000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "post_logout_redirect_uris" text NOT NULL DEFAULT ''`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "post_logout_redirect_uris"`);
  }
}
