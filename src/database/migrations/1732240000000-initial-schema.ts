import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

/** Users, their orders, signing keys and the revoked-grant list. */
export class InitialSchema1732240000000 implements MigrationInterface {
  name = 'InitialSchema1732240000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'users',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'email', type: 'varchar', length: '254' },
          { name: 'email_normalized', type: 'varchar', length: '254', isUnique: true },
          { name: 'password_hash', type: 'varchar', length: '255' },
          { name: 'name', type: 'varchar', length: '100' },
          { name: 'gender', type: 'varchar', length: '10' },
          { name: 'age', type: 'integer' },
          { name: 'role', type: 'varchar', length: '10', default: "'user'" },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    // Every list query is served by an index: the gender filter + sort key + id tie-break, and each sort alone.
    for (const key of ['age', 'name', 'email', 'created_at']) {
      await q.createIndex('users', new TableIndex({ name: `idx_users_gender_${key}`, columnNames: ['gender', key, 'id'] }));
      await q.createIndex('users', new TableIndex({ name: `idx_users_${key}`, columnNames: [key, 'id'] }));
    }

    await q.createTable(
      new Table({
        name: 'user_counts',
        columns: [
          { name: 'gender', type: 'varchar', length: '10', isPrimary: true },
          { name: 'total', type: 'integer', default: 0 },
        ],
      }),
    );
    await q.query(`INSERT INTO user_counts (gender, total) VALUES ('female', 0), ('male', 0), ('other', 0)`);
    // The list's `total` is read from these counters, kept exact by triggers in the same statement as the write,
    // so a page of 100,000 users costs no more than a page of 1,000.
    if (q.connection.options.type === 'postgres') {
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
    } else {
      await q.query(`CREATE TRIGGER user_counts_insert AFTER INSERT ON users
        BEGIN UPDATE user_counts SET total = total + 1 WHERE gender = NEW.gender; END`);
      await q.query(`CREATE TRIGGER user_counts_delete AFTER DELETE ON users
        BEGIN UPDATE user_counts SET total = total - 1 WHERE gender = OLD.gender; END`);
      await q.query(`CREATE TRIGGER user_counts_update AFTER UPDATE OF gender ON users WHEN OLD.gender <> NEW.gender
        BEGIN
          UPDATE user_counts SET total = total - 1 WHERE gender = OLD.gender;
          UPDATE user_counts SET total = total + 1 WHERE gender = NEW.gender;
        END`);
    }

    await q.createTable(
      new Table({
        name: 'orders',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'user_id', type: 'varchar', length: '36' },
          { name: 'item', type: 'varchar', length: '200' },
          { name: 'quantity', type: 'integer' },
          { name: 'unit_price_cents', type: 'bigint' },
          { name: 'currency', type: 'varchar', length: '3' },
          { name: 'total_cents', type: 'bigint' },
          { name: 'status', type: 'varchar', length: '10' },
          { name: 'created_at', type: 'bigint' },
        ],
        foreignKeys: [{ columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'], onDelete: 'CASCADE' }],
      }),
    );
    await q.createIndex('orders', new TableIndex({ name: 'idx_orders_user_created', columnNames: ['user_id', 'created_at', 'id'] }));
    await q.createIndex('orders', new TableIndex({ name: 'idx_orders_user_total', columnNames: ['user_id', 'total_cents', 'id'] }));
    await q.createIndex(
      'orders',
      new TableIndex({ name: 'idx_orders_user_status_created', columnNames: ['user_id', 'status', 'created_at', 'id'] }),
    );

    await q.createTable(
      new Table({
        name: 'signing_keys',
        columns: [
          { name: 'kid', type: 'varchar', length: '64', isPrimary: true },
          { name: 'private_jwk', type: 'text' },
          { name: 'public_jwk', type: 'text' },
          { name: 'created_at', type: 'bigint' },
        ],
      }),
    );

    await q.createTable(
      new Table({
        name: 'revoked_grants',
        columns: [
          { name: 'grant_id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'revoked_at', type: 'bigint' },
          // After this instant no access token of the grant can still be valid, so the row may be pruned.
          { name: 'expires_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex('revoked_grants', new TableIndex({ name: 'idx_revoked_grants_expires', columnNames: ['expires_at'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') {
      await q.query('DROP TRIGGER IF EXISTS user_counts_update ON users');
      await q.query('DROP TRIGGER IF EXISTS user_counts_insert_delete ON users');
      await q.query('DROP FUNCTION IF EXISTS user_counts_track()');
    }
    for (const table of ['revoked_grants', 'signing_keys', 'orders', 'user_counts', 'users']) {
      await q.dropTable(table);
    }
  }
}
