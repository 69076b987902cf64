import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, type Repository } from 'typeorm';
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
}

const FIND_SESSION = sql`SELECT id, user_id, csrf_token, expires_at FROM sessions WHERE id = :id`;
/** The session and the scopes its user already granted the client, in one round trip. */
const FIND_SESSION_WITH_CONSENT = sql`
  SELECT s.id, s.user_id, s.csrf_token, s.expires_at, c.scope AS consented_scope
  FROM sessions s LEFT JOIN consents c ON c.user_id = s.user_id AND c.client_id = :clientId
  WHERE s.id = :id`;

interface SessionRow {
  id: string;
  user_id: string;
  csrf_token: string;
  expires_at: string | number;
  consented_scope?: string | null;
}

/** Login sessions, in the database so that any instance recognises them. */
@Injectable()
export class SessionsService {
  constructor(
    @InjectRepository(Session) private readonly sessions: Repository<Session>,
    private readonly config: OAuthConfig,
    private readonly db: SqlRunner,
  ) {}

  /** Starts a new session (never reusing an old id). */
  async start(userId: string): Promise<StartedSession> {
    const secret = randomSecret(32);
    const now = Date.now();
    const session = this.sessions.create({
      id: hashSecret(secret),
      userId,
      csrfToken: randomSecret(24),
      createdAt: now,
      expiresAt: now + this.config.sessionTtl * 1000,
    });
    await this.sessions.insert(session);
    if (Math.random() < 0.01) void this.sessions.delete({ expiresAt: LessThan(now) }).catch(() => undefined);
    return { session, secret };
  }

  /** The live session a cookie value names, if any. */
  async current(secret: string | undefined): Promise<CurrentSession | undefined> {
    if (!secret || secret.length > 100) return undefined;
    return live(await this.db.one<SessionRow>(FIND_SESSION, { id: hashSecret(secret) }));
  }

  /** The live session a cookie value names and the scopes its user has already granted `clientId`. */
  async currentWithConsent(
    secret: string | undefined,
    clientId: string,
  ): Promise<{ session: CurrentSession; consented: Set<string> } | undefined> {
    if (!secret || secret.length > 100) return undefined;
    const row = await this.db.one<SessionRow>(FIND_SESSION_WITH_CONSENT, { id: hashSecret(secret), clientId });
    const session = live(row);
    if (!session) return undefined;
    return { session, consented: new Set((row?.consented_scope ?? '').split(' ').filter(Boolean)) };
  }

  async end(secret: string | undefined): Promise<void> {
    if (secret) await this.sessions.delete({ id: hashSecret(secret) });
  }
}

function live(row: SessionRow | undefined): CurrentSession | undefined {
  if (!row) return undefined;
  const expiresAt = epochMs(row.expires_at);
  if (expiresAt <= Date.now()) return undefined;
  return { id: row.id, userId: row.user_id, csrfToken: row.csrf_token, expiresAt };
}
