import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * Pushed authorization requests (RFC 9126): each named by the hash of its `request_uri`, with its client, its
 * parameters (JSON), when it expires and when it yielded an answer (a code or a refusal: once only). And a client
 * may be required to push every request.
 */
export class PushedAuthorizationRequests1795740500000 implements MigrationInterface {
  name = 'PushedAuthorizationRequests1795740500000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'pushed_requests',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'client_id', type: 'varchar', length: '255' },
          { name: 'params', type: 'text' },
          { name: 'expires_at', type: 'bigint' },
          { name: 'used_at', type: 'bigint', isNullable: true },
        ],
      }),
    );
    // The retention job deletes the expired ones by this.
    await q.createIndex('pushed_requests', new TableIndex({ name: 'idx_pushed_requests_expires', columnNames: ['expires_at'] }));
    await q.query(`ALTER TABLE "clients" ADD COLUMN "require_pushed_requests" boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "clients" DROP COLUMN "require_pushed_requests"`);
    await q.dropTable('pushed_requests');
  }
}
