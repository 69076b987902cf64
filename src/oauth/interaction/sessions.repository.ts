import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, type StatementWrite, epochMs, sql } from '../../database/sql';
import type { Session } from '../entities/session.entity';

/** A session row as the authorization endpoint reads it, with the client's consented scope when asked for. */
export interface SessionRecord {
  id: string;
  userId: string;
  csrfToken: string;
  expiresAt: number;
  /** When the user logged in (epoch ms): ID tokens' `auth_time`. */
  authTime: number;
  /** The session's id in ID tokens (never its cookie's hash, which is `id`). */
  sid: string;
  /** How the person signed in (RFC 8176 values, space-separated); null for a session from before they were kept. */
  amr: string | null;
  /** Only when read with a client: the scope its user has granted that client (empty when none). */
  consentedScope?: string;
}

const INSERT_SESSION = sql`
  INSERT INTO sessions (id, user_id, csrf_token, created_at, expires_at, auth_time, sid, amr)
  VALUES (:id, :userId, :csrfToken, :now, :expiresAt, :now, :sid, :amr)`;
/** `auth_time` falls back to the session's start for a row an older instance wrote during an upgrade. */
const FIND_SESSION = sql`
  SELECT id, user_id, csrf_token, expires_at, COALESCE(auth_time, created_at) AS auth_time, sid, amr FROM sessions WHERE id = :id`;
/**
 * The session and the scopes its user already granted the client, in one round trip. The consent is read by its
 * key in a subquery, not joined: PostgreSQL's cached plan for the join, made on a fresh database before the first
 * ANALYZE, read the whole consents table on every authorization request.
 */
const FIND_SESSION_WITH_CONSENT = sql`
  SELECT s.id, s.user_id, s.csrf_token, s.expires_at, COALESCE(s.auth_time, s.created_at) AS auth_time, s.sid, s.amr,
    (SELECT c.scope FROM consents c WHERE c.user_id = s.user_id AND c.client_id = :clientId) AS consented_scope
  FROM sessions s
  WHERE s.id = :id`;

/**
 * A login in a session of the same user: the session gets a new id (its cookie changes, as at every login), its
 * login time moves to now and its lifetime starts again; its `sid` stays.
 */
const REAUTHENTICATE = sql`
  UPDATE sessions SET id = :newId, csrf_token = :csrfToken, auth_time = :now, expires_at = :expiresAt, amr = :amr
  WHERE id = :id AND user_id = :userId`;
const DELETE_SESSION = sql`DELETE FROM sessions WHERE id = :id`;
const DELETE_USER_SESSIONS = sql`DELETE FROM sessions WHERE user_id = :userId`;
const DELETE_OTHER_USER_SESSIONS = sql`DELETE FROM sessions WHERE user_id = :userId AND id <> :kept`;

interface SessionRow {
  id: string;
  user_id: string;
  csrf_token: string;
  expires_at: string | number;
  auth_time: string | number;
  sid: string;
  amr: string | null;
  consented_scope?: string | null;
}

function record(row: SessionRow): SessionRecord {
  const found: SessionRecord = {
    id: row.id,
    userId: row.user_id,
    csrfToken: row.csrf_token,
    expiresAt: epochMs(row.expires_at),
    authTime: epochMs(row.auth_time),
    sid: row.sid,
    amr: row.amr,
  };
  if (row.consented_scope !== undefined) found.consentedScope = row.consented_scope ?? '';
  return found;
}

/** The login sessions' one way to their table. */
@Injectable()
export class SessionsRepository {
  constructor(private readonly db: SqlRunner) {}

  /** A new session's insert, as a write of the caller's unit of work. */
  static insertOf(session: Session): StatementWrite {
    const { id, userId, csrfToken, createdAt: now, expiresAt, sid, amr } = session;
    return { statement: INSERT_SESSION, params: { id, userId, csrfToken, now, expiresAt, sid, amr } };
  }

  /** The session of this id; with `clientId`, also the scope its user has granted that client, in the same query. */
  async find(id: string, clientId?: string): Promise<SessionRecord | undefined> {
    const row =
      clientId === undefined
        ? await this.db.one<SessionRow>(FIND_SESSION, { id })
        : await this.db.one<SessionRow>(FIND_SESSION_WITH_CONSENT, { id, clientId });
    return row && record(row);
  }

  /**
   * Moves the session `id` of `userId` to `newId` with a new CSRF token, login time `now` and expiry, with its
   * event; false (and no event) when there is no such session.
   */
  async reauthenticate(
    change: { id: string; newId: string; csrfToken: string; userId: string; now: number; expiresAt: number; amr: string },
    event: AuditEvent,
  ): Promise<boolean> {
    const [changed] = await this.db.atomic([
      { statement: REAUTHENTICATE, params: change },
      AuditRepository.insertOf(event, { onlyIfChanged: true }),
    ]);
    return changed > 0;
  }

  /** Deletes every session of a person with `event`; how many there were. */
  async deleteAllOf(userId: string, event: AuditEvent): Promise<number> {
    const [deleted] = await this.db.atomic([{ statement: DELETE_USER_SESSIONS, params: { userId } }, AuditRepository.insertOf(event)]);
    return deleted;
  }

  /** Deletes every session of a person but `kept` (every one when none), with `event` when any went; how many. */
  async deleteOthersOf(userId: string, kept: string | undefined, event: AuditEvent): Promise<number> {
    const write =
      kept === undefined
        ? { statement: DELETE_USER_SESSIONS, params: { userId } }
        : { statement: DELETE_OTHER_USER_SESSIONS, params: { userId, kept } };
    const [deleted] = await this.db.atomic([write, AuditRepository.insertOf(event, { onlyIfChanged: true })]);
    return deleted;
  }

  /** Deletes the session with its event; false (and no event) when it was gone already. */
  async delete(id: string, event: AuditEvent): Promise<boolean> {
    const [deleted] = await this.db.atomic([
      { statement: DELETE_SESSION, params: { id } },
      AuditRepository.insertOf(event, { onlyIfChanged: true }),
    ]);
    return deleted > 0;
  }
}
