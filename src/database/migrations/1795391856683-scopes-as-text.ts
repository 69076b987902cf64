import { type MigrationInterface, type QueryRunner } from 'typeorm';

const TABLES = ['clients', 'grants', 'authorization_codes', 'refresh_tokens', 'consents'];

/**
 * Scope lists grow with every module that defines scopes; `varchar(200)` would overflow after a few more modules.
 * SQLite does not enforce a varchar length (the column already has TEXT affinity), so only PostgreSQL changes.
 */
export class ScopesAsText1795391856683 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'postgres') return;
    for (const table of TABLES) await queryRunner.query(`ALTER TABLE "${table}" ALTER COLUMN "scope" TYPE text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'postgres') return;
    for (const table of TABLES) await queryRunner.query(`ALTER TABLE "${table}" ALTER COLUMN "scope" TYPE varchar(200)`);
  }
}
