import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * PostgreSQL: the user counters are kept by statement-level triggers over the transition tables, one UPDATE per
 * gender per statement, instead of one UPDATE per row. A bulk insert of 100,000 users no longer runs 100,000
 * counter updates (each on the same three hot rows). SQLite has only row-level triggers, which cost
 * microseconds in-process, and keeps them.
 */
export class UserCountsPerStatement1795468491813 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'postgres') return;
    await q.query('DROP TRIGGER IF EXISTS user_counts_insert_delete ON users');
    await q.query('DROP TRIGGER IF EXISTS user_counts_update ON users');
    await q.query('DROP FUNCTION IF EXISTS user_counts_track()');
    await q.query(`CREATE FUNCTION user_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
          UPDATE user_counts c SET total = c.total + n.count
          FROM (SELECT gender, count(*) AS count FROM new_rows GROUP BY gender) n WHERE c.gender = n.gender;
        END IF;
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
          UPDATE user_counts c SET total = c.total - o.count
          FROM (SELECT gender, count(*) AS count FROM old_rows GROUP BY gender) o WHERE c.gender = o.gender;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER user_counts_insert AFTER INSERT ON users
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_counts_apply()`);
    await q.query(`CREATE TRIGGER user_counts_delete AFTER DELETE ON users
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION user_counts_apply()`);
    // An UPDATE trigger cannot name columns together with transition tables: every update statement counts the
    // genders before and after, which nets to zero for rows whose gender did not change.
    await q.query(`CREATE TRIGGER user_counts_update AFTER UPDATE ON users
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_counts_apply()`);
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'postgres') return;
    await q.query('DROP TRIGGER IF EXISTS user_counts_insert ON users');
    await q.query('DROP TRIGGER IF EXISTS user_counts_delete ON users');
    await q.query('DROP TRIGGER IF EXISTS user_counts_update ON users');
    await q.query('DROP FUNCTION IF EXISTS user_counts_apply()');
    await q.query(`CREATE FUNCTION user_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP IN ('INSERT', 'UPDATE') THEN UPDATE user_counts SET total = total + 1 WHERE gender = NEW.gender; END IF;
        IF TG_OP IN ('DELETE', 'UPDATE') THEN UPDATE user_counts SET total = total - 1 WHERE gender = OLD.gender; END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER user_counts_insert_delete AFTER INSERT OR DELETE ON users
      FOR EACH ROW EXECUTE FUNCTION user_counts_track()`);
    await q.query(`CREATE TRIGGER user_counts_update AFTER UPDATE OF gender ON users
      FOR EACH ROW WHEN (OLD.gender IS DISTINCT FROM NEW.gender) EXECUTE FUNCTION user_counts_track()`);
  }
}
