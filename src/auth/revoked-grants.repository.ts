import { Injectable } from '@nestjs/common';
import { SqlRunner, Statement, type StatementWrite, epochMs, expiredRowsDeletion } from '../database/sql';

/** An entry of the revoked list as stored: a grant id, or a whole client's or person's entry. */
export interface RevokedEntry {
  id: string;
  /** When it was revoked, and until when it stays on the list (epoch ms). */
  revokedAt: number;
  expiresAt: number;
}

/**
 * A page of the list, read as one row: the grant ids as one string (a UUID and its expiry in epoch ms a line, in no
 * particular order), the other entries (a whole client's or person's) one by one, and where the read stands.
 */
export interface RevokedPage {
  /** Where the next sync may resume so that it misses nothing, as of this page's snapshot ({@link PAGE_FROM}). */
  next: number;
  /** Entries in the page, both kinds. */
  count: number;
  grants: string;
  others: RevokedEntry[];
  /** The page's last entry in cursor order: the next page starts after it. */
  last: { seq: number; revokedAt: number; id: string } | undefined;
}

/** An entry that is not a grant id: id, revoked_at, expires_at. */
type OtherRow = [string, string | number, string | number];

interface PageRow {
  next: string | number;
  count: string | number;
  grants: string | null;
  /** SQLite's JSON is text; PostgreSQL's driver parses it (none: null). */
  others: string | OtherRow[] | null;
  last: string | null;
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
/** A grant id as the page sends it in `grants`: a UUID's shape, 36 bytes (so 36 characters in JavaScript), no `:`. */
const GRANT_ID = `grant_id LIKE '________-____-____-____-____________' AND octet_length(grant_id) = 36 AND grant_id NOT LIKE '%:%'`;

/**
 * The live entries after a point in cursor order (`change_seq`, `revoked_at`, `grant_id`: the rows of one large write
 * come in about the order they were stored in, not scattered by their random ids), up to `:limit` of them, as one
 * row: a million rows as a hundred objects of the driver, not a million. With the page, in the same statement (the
 * same snapshot), where the next sync may resume so that it misses nothing (`next`). The page's last key is found
 * by three maxima, not a sort (on PostgreSQL 14 ms a page instead of 30, measured).
 */
function pageFrom(next: string, dialect: { concat: string; newline: string; jsonRows: string; json: string }): string {
  return `
    WITH page AS (
      SELECT grant_id, revoked_at, expires_at, change_seq, (${GRANT_ID}) AS plain FROM revoked_grants
      WHERE (change_seq, revoked_at, grant_id) > (:seq, :afterAt, :afterId) AND expires_at > :now
      ORDER BY change_seq, revoked_at, grant_id LIMIT :limit)
    SELECT ${next} AS next, count(*) AS count,
      ${dialect.concat}(grant_id || expires_at, ${dialect.newline}) FILTER (WHERE plain) AS grants,
      ${dialect.jsonRows}(${dialect.json}(grant_id, revoked_at, expires_at)) FILTER (WHERE NOT plain) AS others,
      (SELECT seq || ' ' || at || ' ' || (SELECT max(grant_id) FROM page WHERE change_seq = seq AND revoked_at = at)
       FROM (SELECT seq, (SELECT max(revoked_at) FROM page WHERE change_seq = seq) AS at
             FROM (SELECT max(change_seq) AS seq FROM page) AS last_seq) AS last_key) AS last
    FROM page`;
}
/**
 * Where the next read may start. PostgreSQL: the oldest transaction still running (each write is numbered with its
 * transaction's id, and every older one has ended, so no entry below it can appear any more; see
 * docs/revocation.md). SQLite: one past the highest (writes take turns, each committing before the next takes its
 * number).
 */
const PAGE_FROM = new Statement({
  postgres: pageFrom('pg_snapshot_xmin(pg_current_snapshot())::text', {
    concat: 'string_agg',
    newline: 'chr(10)',
    jsonRows: 'json_agg',
    json: 'json_build_array',
  }),
  sqlite: pageFrom('(SELECT COALESCE(MAX(change_seq), 0) + 1 FROM revoked_grants)', {
    concat: 'group_concat',
    newline: 'char(10)',
    jsonRows: 'json_group_array',
    json: 'json_array',
  }),
});

/** Up to `:batch` entries past the life of every token they cover (planned at each run with its cutoff). */
const DELETE_EXPIRED = expiredRowsDeletion('revoked_grants', 'grant_id');

/** The last entry's `change_seq revoked_at grant_id` (the id last: it may hold spaces). */
function lastOf(text: string): { seq: number; revokedAt: number; id: string } {
  const first = text.indexOf(' ');
  const second = text.indexOf(' ', first + 1);
  return { seq: Number(text.slice(0, first)), revokedAt: Number(text.slice(first + 1, second)), id: text.slice(second + 1) };
}

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

  /** Up to `limit` entries live at `now` after the point (`seq`, `revokedAt`, `id`), in cursor order, as one page. */
  async pageFrom(after: { seq: number; revokedAt: number; id: string }, now: number, limit: number): Promise<RevokedPage> {
    const params = { now, seq: after.seq, afterAt: after.revokedAt, afterId: after.id, limit };
    const row = (await this.db.one<PageRow>(PAGE_FROM, params))!;
    const others = typeof row.others === 'string' ? (JSON.parse(row.others) as OtherRow[]) : (row.others ?? []);
    return {
      next: Number(row.next),
      count: Number(row.count),
      grants: row.grants ?? '',
      others: others.map(([id, revokedAt, expiresAt]) => ({ id, revokedAt: epochMs(revokedAt), expiresAt: epochMs(expiresAt) })),
      last: row.last === null ? undefined : lastOf(row.last),
    };
  }

  /** Deletes up to `batch` entries that expired before `cutoff`; returns how many. */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
