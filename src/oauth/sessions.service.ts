import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { Session } from './entities/session.entity';
import { SqlRunner, epochMs, sql } from '../database/sql';
import { OAuthConfig } from './oauth.config';
import { hashSecret, randomSecret } from './secrets';

export interface StartedSession {
  session: Session;
  /** The cookie value: shown to the browser once, stored only as its hash (the session id). */
  secret: string;
}

/** A live session as the authorization endpoint reads it. */
export interface CurrentSession {
  id: string;
  userId: string;
  csrfToken: string;
  expiresAt: number;
  /** When the user logged in (epoch ms): ID tokens' `auth_time`. */
  authTime: number;
  /** The session's id in ID tokens (never its cookie's hash, which is `id`). */
  sid: string;
  /** The scopes the user has granted the client asked about (see {@link SessionsService.current}). */
  consented?: Set<string>;
}

const INSERT_SESSION = sql`
  INSERT INTO sessions (id, user_id, csrf_token, created_at, expires_at, auth_time, sid)
  VALUES (:id, :userId, :csrfToken, :now, :expiresAt, :now, :sid)`;
/** `auth_time` falls back to the session's start for a row an older instance wrote during an upgrade. */
const FIND_SESSION = sql`
  SELECT id, user_id, csrf_token, expires_at, COALESCE(auth_time, created_at) AS auth_time, sid FROM sessions WHERE id = :id`;
/**
 * The session and the scopes its user already granted the client, in one round trip. The consent is read by its
 * key in a subquery, not joined: PostgreSQL's cached plan for the join, made on a fresh database before the first
 * ANALYZE, read the whole consents table on every authorization request.
 */
const FIND_SESSION_WITH_CONSENT = sql`
  SELECT s.id, s.user_id, s.csrf_token, s.expires_at, COALESCE(s.auth_time, s.created_at) AS auth_time, s.sid,
    (SELECT c.scope FROM consents c WHERE c.user_id = s.user_id AND c.client_id = :clientId) AS consented_scope
  FROM sessions s
  WHERE s.id = :id`;

/**
 * A login in a session of the same user: the session gets a new id (its cookie changes, as at every login), its
 * login time moves to now and its lifetime starts again; its `sid` stays.
 */
const REAUTHENTICATE = sql`
  UPDATE sessions SET id = :newId, csrf_token = :csrfToken, auth_time = :now, expires_at = :expiresAt
  WHERE id = :id AND user_id = :userId`;
const DELETE_SESSION = sql`DELETE FROM sessions WHERE id = :id`;

/** Why a session ended, in its `logout` event. */
export type LogoutVia = 'logout form' | 'end session' | 'end session confirmed' | 'account switch';

interface SessionRow {
  id: string;
  user_id: string;
  csrf_token: string;
  expires_at: string | number;
  auth_time: string | number;
  sid: string;
  consented_scope?: string | null;
}

/** Login sessions, in the database so that any instance recognises them. */
@Injectable()
export class SessionsService {
  constructor(
    @InjectRepository(Session) private readonly sessions: Repository<Session>,
    private readonly config: OAuthConfig,
    private readonly db: SqlRunner,
    private readonly audit: AuditService,
  ) {}

  /** Starts a new session (never reusing an old id), with its `login.succeeded` event. */
  async start(userId: string, context: AuditContext): Promise<StartedSession> {
    const secret = randomSecret(32);
    const now = Date.now();
    const session = this.sessions.create({
      id: hashSecret(secret),
      userId,
      csrfToken: randomSecret(24),
      createdAt: now,
      expiresAt: now + this.config.sessionTtl * 1000,
      authTime: now,
      sid: randomUUID(),
    });
    const by = { actor: `user:${userId}` as const, context };
    await this.audit.recorded({ type: 'login.succeeded', userId }, by, [
      {
        statement: INSERT_SESSION,
        params: { id: session.id, userId, csrfToken: session.csrfToken, now, expiresAt: session.expiresAt, sid: session.sid },
      },
    ]);
    return { session, secret };
  }

  /**
   * The live session a cookie value names, if any. With `consentOf` (a client id), also the scopes its user has
   * already granted that client, read in the same query.
   */
  async current(secret: string | undefined, consentOf?: string): Promise<CurrentSession | undefined> {
    const id = this.idOf(secret);
    if (id === undefined) return undefined;
    const row =
      consentOf === undefined
        ? await this.db.one<SessionRow>(FIND_SESSION, { id })
        : await this.db.one<SessionRow>(FIND_SESSION_WITH_CONSENT, { id, clientId: consentOf });
    if (!row) return undefined;
    const expiresAt = epochMs(row.expires_at);
    if (expiresAt <= Date.now()) return undefined;
    const session: CurrentSession = {
      id: row.id,
      userId: row.user_id,
      csrfToken: row.csrf_token,
      expiresAt,
      authTime: epochMs(row.auth_time),
      sid: row.sid,
    };
    if (consentOf !== undefined) session.consented = new Set((row.consented_scope ?? '').split(' ').filter(Boolean));
    return session;
  }

  /**
   * A new login of the session's own user (OpenID Connect `prompt=login`, `max_age`): the session keeps its `sid`,
   * its `auth_time` becomes now and it gets a new CSRF token, with a `login.succeeded` event; the new cookie value, or undefined when the session
   * had ended meanwhile.
   */
  async reauthenticate(session: Pick<CurrentSession, 'id' | 'userId'>, context: AuditContext): Promise<string | undefined> {
    const { id, userId } = session;
    const secret = randomSecret(32);
    const now = Date.now();
    const event = AuditService.event(
      { type: 'login.succeeded', actor: `user:${userId}`, userId, details: { reauthentication: true } },
      context,
      now,
    );
    // A new cookie value and a new CSRF token: neither may have leaked before this login.
    const params = {
      id,
      newId: hashSecret(secret),
      csrfToken: randomSecret(24),
      userId,
      now,
      expiresAt: now + this.config.sessionTtl * 1000,
    };
    const [changed] = await this.db.atomic([{ statement: REAUTHENTICATE, params }, AuditService.writeOf(event, { onlyIfChanged: true })]);
    if (!changed) return undefined;
    this.audit.log(event);
    return secret;
  }

  /**
   * Ends a session, with a `logout` event (naming the client that asked, if one did) when it was still there.
   * Grants given in it stay: they are the applications' access, which the connected-apps page revokes.
   */
  async end(
    session: Pick<CurrentSession, 'id' | 'userId'>,
    context: AuditContext,
    opts: { via: LogoutVia; clientId?: string | null },
  ): Promise<void> {
    const { id, userId } = session;
    const event = AuditService.event(
      { type: 'logout', actor: `user:${userId}`, userId, clientId: opts.clientId ?? null, details: { via: opts.via } },
      context,
    );
    const [deleted] = await this.db.atomic([
      { statement: DELETE_SESSION, params: { id } },
      AuditService.writeOf(event, { onlyIfChanged: true }),
    ]);
    if (deleted) this.audit.log(event);
  }

  /** The session id a cookie value stands for (its hash); undefined for a value no session could have. */
  idOf(secret: string | undefined): string | undefined {
    return !secret || secret.length > 100 ? undefined : hashSecret(secret);
  }
}
