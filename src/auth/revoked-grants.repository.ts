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
  change_seq: string | number;
}

/**
 * Revoked again (a client's client-credentials tokens): the later time counts, and the write is numbered again.
 * PostgreSQL numbers it in a trigger (the migration's). SQLite, where writes take turns: one more than the highest,
 * and never below the time in microseconds (`:nowMicros`), so that a number is not handed out again after the
 * retention job deleted the rows that held the highest.
 */
const UPSERT_REVOKED_GRANT = new Statement({
  postgres: `
    INSERT INTO revoked_grants (grant_id, revoked_at, expires_at) VALUES (:grantId, :now, :expiresAt)
    ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at, expires_at = excluded.expires_at`,
  sqlite: `
    INSERT INTO revoked_grants (grant_id, revoked_at, expires_at, change_seq)
    VALUES (:grantId, :now, :expiresAt, MAX((SELECT COALESCE(MAX(change_seq), 0) + 1 FROM revoked_grants), :nowMicros))
    ON CONFLICT (grant_id) DO UPDATE SET revoked_at = excluded.revoked_at, expires_at = excluded.expires_at, change_seq = excluded.change_seq`,
});
/**
 * The live entries written at or after a cursor, in `change_seq`, `revoked_at`, `grant_id` order (the rows of one
 * large write then come in about the order they were stored in, not scattered by their random ids), a page at a time.
 */
const PAGE_FROM = new Statement(
  `SELECT grant_id, revoked_at, expires_at, change_seq FROM revoked_grants
   WHERE (change_seq, revoked_at, grant_id) > (:seq, :afterAt, :afterId) AND expires_at > :now
   ORDER BY change_seq, revoked_at, grant_id LIMIT :limit`,
);
/**
 * Where the next read may start so that it misses nothing. PostgreSQL: the oldest transaction still running (every
 * older one has ended, so no entry below it can appear any more). SQLite: one past the highest written (writes take
 * turns, each committing before the next takes its number).
 */
const NEXT_CURSOR = new Statement({
  postgres: `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS next`,
  sqlite: `SELECT COALESCE(MAX(change_seq), 0) + 1 AS next FROM revoked_grants`,
});

/** Up to `:batch` entries past the life of every token they cover (planned at each run with its cutoff). */
const DELETE_EXPIRED = expiredRowsDeletion('revoked_grants', 'grant_id');

/** The time in microseconds (SQLite's floor for a write's number). */
function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/** The auth module's one way to the revoked list's table. */
@Injectable()
export class RevokedGrantsRepository {
  constructor(private readonly db: SqlRunner) {}

  /** An entry's upsert as a write of the caller's unit of work ({@link SqlRunner.atomic}). */
  static upsertOf(id: string, revokedAt: number, expiresAt: number): StatementWrite {
    return { statement: UPSERT_REVOKED_GRANT, params: { grantId: id, now: revokedAt, expiresAt, nowMicros: nowMicros() } };
  }

  /** Upserts entries revoked at `revokedAt`, listed until `expiresAt`, in one transaction. */
  async upsertAll(ids: string[], revokedAt: number, expiresAt: number): Promise<void> {
    await this.db.atomic(ids.map((id) => RevokedGrantsRepository.upsertOf(id, revokedAt, expiresAt)));
  }

  /** Where a read that starts now may next resume ({@link NEXT_CURSOR}); take it before the read. */
  async cursor(): Promise<number> {
    return Number((await this.db.one<{ next: string | number }>(NEXT_CURSOR, {}))!.next);
  }

  /** Up to `limit` entries live at `now` after the point (`seq`, `afterAt`, `afterId`), in cursor order. */
  async pageFrom(
    after: { seq: number; revokedAt: number; id: string },
    now: number,
    limit: number,
  ): Promise<(RevokedEntry & { seq: number })[]> {
    const { rows } = await this.db.run<RevokedRow>(PAGE_FROM, { now, seq: after.seq, afterAt: after.revokedAt, afterId: after.id, limit });
    return rows.map((row) => ({
      id: row.grant_id,
      revokedAt: epochMs(row.revoked_at),
      expiresAt: epochMs(row.expires_at),
      seq: Number(row.change_seq),
    }));
  }

  /** Deletes up to `batch` entries that expired before `cutoff`; returns how many. */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
