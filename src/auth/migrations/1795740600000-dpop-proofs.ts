import { type MigrationInterface, type QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * DPoP (RFC 9449 11.1): the proofs already used, each by the SHA-256 of its key's thumbprint and its `jti`, kept
 * until the proof is too old to be accepted anyway, so that one presented again is refused by every instance.
 */
export class DpopProofs1795740600000 implements MigrationInterface {
  name = 'DpopProofs1795740600000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'dpop_proofs',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'expires_at', type: 'bigint' },
        ],
      }),
    );
    // The retention job deletes the expired ones by this.
    await q.createIndex('dpop_proofs', new TableIndex({ name: 'idx_dpop_proofs_expires', columnNames: ['expires_at'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('dpop_proofs');
  }
}
