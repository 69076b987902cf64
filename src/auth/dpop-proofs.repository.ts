import { Injectable } from '@nestjs/common';
import { SqlRunner, expiredRowsDeletion, sql } from '../database/sql';

const USE = sql`INSERT INTO dpop_proofs (id, expires_at) VALUES (:id, :expiresAt) ON CONFLICT (id) DO NOTHING RETURNING id`;
const DELETE_EXPIRED = expiredRowsDeletion('dpop_proofs');

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
