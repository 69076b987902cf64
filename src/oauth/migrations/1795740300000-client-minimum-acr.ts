import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The sign-in level a client requires of every person it signs in (`aal1`, `aal2`, `phr`; see auth/acr.ts), on top
 * of what its requests ask for with `acr_values`. Null: none of its own.
 */
export class ClientMinimumAcr1795740300000 implements MigrationInterface {
  name = 'ClientMinimumAcr1795740300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "clients" ADD COLUMN "minimum_acr" varchar(8)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "clients" DROP COLUMN "minimum_acr"`);
  }
}
