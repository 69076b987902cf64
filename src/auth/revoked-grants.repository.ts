import { Injectable } from '@nestjs/common';
import { SqlRunner, Statement, type StatementWrite, epochMs, expiredRowsDeletion } from '../database/sql';

/** An entry of the revoked list as stored: a grant id, or a whole client's or person's entry. */
export interface RevokedEntry {
  id: string;
  /** When it was revoked, and until when it stays on the list (epoch ms). */
  revokedAt: number;
  expiresAt: number;
}

interface RevokedRow {
  grant_id: string;
  revoked_at: string | number;
  expires_at: string | number;
}

/** Revoked again (a client's client-credentials tokens): the later time counts. */
const UPSERT_REVOKED_GRANT = new Statement(`
  INSERT INTO revoked_grants (grant_id, revoked_at, expires_at) VALUES (:grantId, :now, :expiresAt)
  ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at, expires_at = excluded.expires_at`);
/** The live entries revoked after a point (`revoked_at`, then `grant_id`), in that order, a page at a time. */
const PAGE_AFTER = new Statement(
  `SELECT grant_id, revoked_at, expires_at FROM revoked_grants
   WHERE (revoked_at, grant_id) > (:sinceAt, :sinceId) AND expires_at > :now
   ORDER BY revoked_at, grant_id LIMIT :limit`,
);

/** Up to `:batch` entries past the life of every token they cover (planned at each run with its cutoff). */
const DELETE_EXPIRED = expiredRowsDeletion('revoked_grants', 'grant_id');

/** The auth module's one way to the revoked list's table. */
@Injectable()
export class RevokedGrantsRepository {
  constructor(private readonly db: SqlRunner) {}

  /** An entry's upsert as a write of the caller's unit of work ({@link SqlRunner.atomic}). */
  static upsertOf(id: string, revokedAt: number, expiresAt: number): StatementWrite {
    return { statement: UPSERT_REVOKED_GRANT, params: { grantId: id, now: revokedAt, expiresAt } };
  }

  /** Upserts entries revoked at `revokedAt`, listed until `expiresAt`, in one transaction. */
  async upsertAll(ids: string[], revokedAt: number, expiresAt: number): Promise<void> {
    await this.db.atomic(ids.map((id) => RevokedGrantsRepository.upsertOf(id, revokedAt, expiresAt)));
  }

  /** Up to `limit` entries live at `now` revoked after (`sinceAt`, `sinceId`), oldest first. */
  async pageAfter(sinceAt: number, sinceId: string, now: number, limit: number): Promise<RevokedEntry[]> {
    const { rows } = await this.db.run<RevokedRow>(PAGE_AFTER, { now, sinceAt, sinceId, limit });
    return rows.map((row) => ({ id: row.grant_id, revokedAt: epochMs(row.revoked_at), expiresAt: epochMs(row.expires_at) }));
  }

  /** Deletes up to `batch` entries that expired before `cutoff`; returns how many. */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
