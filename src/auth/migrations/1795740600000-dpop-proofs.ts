import { type MigrationInterface, type QueryRunner, Table } from 'typeorm';

/**
 * DPoP (RFC 9449 11.1): the proofs already used, each by the SHA-256 of its key's thumbprint and its `jti`, kept
 * until the proof is too old to be accepted anyway, so that one presented again is refused by every instance.
 * The key leads with that time (a replay has the same signed `iat`, so the same key): one B-tree per insert,
 * written near its end, and the retention job's deletion reads its start.
 */
export class DpopProofs1795740600000 implements MigrationInterface {
  name = 'DpopProofs1795740600000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'dpop_proofs',
        columns: [
          { name: 'expires_at', type: 'bigint', isPrimary: true },
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('dpop_proofs');
  }
}
