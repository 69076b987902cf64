import { Injectable } from '@nestjs/common';
import { SqlRunner, Statement, sql } from '../database/sql';

const USE = sql`INSERT INTO dpop_proofs (expires_at, id) VALUES (:expiresAt, :id) ON CONFLICT (expires_at, id) DO NOTHING RETURNING id`;
/** By the key's leading column: a range at the start of the one B-tree. */
const DELETE_EXPIRED = new Statement(
  `DELETE FROM dpop_proofs WHERE (expires_at, id) IN (SELECT expires_at, id FROM dpop_proofs WHERE expires_at < :cutoff LIMIT :batch)`,
  { unprepared: true },
);

/** The used DPoP proofs' one way to their table. */
@Injectable()
export class DpopProofsRepository {
  constructor(private readonly db: SqlRunner) {}

  /** Records a proof's id until `expiresAt` (epoch ms); false when it was recorded before (a replay). */
  async use(id: string, expiresAt: number): Promise<boolean> {
    return (await this.db.run(USE, { id, expiresAt })).rows.length > 0;
  }

  /** Deletes up to `batch` proofs expired before `cutoff`; returns how many. */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
