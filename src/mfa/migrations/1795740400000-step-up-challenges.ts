import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * A sign-in waiting for its second factor may be a step-up of a live session (a client asked for a stronger
 * level): it keeps that session's `amr`, to which the factor's methods are added once it is given.
 */
export class StepUpChallenges1795740400000 implements MigrationInterface {
  name = 'StepUpChallenges1795740400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "login_challenges" ADD COLUMN "prior_amr" varchar(64)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "login_challenges" DROP COLUMN "prior_amr"`);
  }
}
