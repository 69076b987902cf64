import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Dynamic client registration (RFC 7591/7592): the hash of a registered client's registration access token, with
 * which it reads, changes and deletes its registration, and the client authentication method it registered (NULL
 * for clients registered by an operator: either secret method).
 */
export class ClientRegistration1795500300000 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "registration_token_hash" varchar(64)`);
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "token_endpoint_auth_method" varchar(32)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "token_endpoint_auth_method"`);
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "registration_token_hash"`);
  }
}
