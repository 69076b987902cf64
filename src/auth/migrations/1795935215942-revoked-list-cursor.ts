import { type MigrationInterface, type QueryRunner, TableIndex } from 'typeorm';

/**
 * The revoked list read from a cursor instead of a time window read again: `change_seq` orders the entries as
 * their writes committed (then `revoked_at`, so that the rows of one large write are read in about the order they
 * were stored in). PostgreSQL: a trigger numbers every insert and update with the writing transaction's id
 * (`pg_current_xact_id()`; a reader takes only what no running transaction can still add below), so that the
 * writes of instances of an earlier version, during a rolling deploy, are numbered too. SQLite, one writer at a
 * time: the upsert numbers its row (see `RevokedGrantsRepository`). Rows already there keep 0: a sync that starts
 * reads from 0. The `revoked_at` index of the read it replaces goes: nothing else reads by it.
 */
export class RevokedListCursor1795935215942 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "revoked_grants" ADD COLUMN "change_seq" bigint NOT NULL DEFAULT 0`);
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`
        CREATE FUNCTION revoked_grants_number() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          NEW.change_seq := pg_current_xact_id()::text::bigint;
          RETURN NEW;
        END $$`);
      await queryRunner.query(`
        CREATE TRIGGER revoked_grants_number BEFORE INSERT OR UPDATE ON "revoked_grants"
        FOR EACH ROW EXECUTE FUNCTION revoked_grants_number()`);
    }
    await queryRunner.createIndex(
      'revoked_grants',
      new TableIndex({ name: 'idx_revoked_grants_change_seq', columnNames: ['change_seq', 'revoked_at', 'grant_id'] }),
    );
    await queryRunner.dropIndex('revoked_grants', 'idx_revoked_grants_revoked_at');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex(
      'revoked_grants',
      new TableIndex({ name: 'idx_revoked_grants_revoked_at', columnNames: ['revoked_at', 'grant_id'] }),
    );
    await queryRunner.dropIndex('revoked_grants', 'idx_revoked_grants_change_seq');
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`DROP TRIGGER revoked_grants_number ON "revoked_grants"`);
      await queryRunner.query(`DROP FUNCTION revoked_grants_number()`);
    }
    await queryRunner.dropColumn('revoked_grants', 'change_seq');
  }
}
