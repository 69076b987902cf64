import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, type Repository } from 'typeorm';
import { Session } from './entities/session.entity';
import { OAuthConfig } from './oauth.config';
import { hashSecret, randomSecret } from './secrets';

export interface StartedSession {
  session: Session;
  /** The cookie value: shown to the browser once, stored only as its hash (the session id). */
  secret: string;
}

/** Login sessions, in the database so that any instance recognises them. */
@Injectable()
export class SessionsService {
  constructor(
    @InjectRepository(Session) private readonly sessions: Repository<Session>,
    private readonly config: OAuthConfig,
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
  async current(secret: string | undefined): Promise<Session | undefined> {
    if (!secret || secret.length > 100) return undefined;
    const session = await this.sessions.findOne({ where: { id: hashSecret(secret) } });
    if (!session || session.expiresAt <= Date.now()) return undefined;
    return session;
  }

  async end(secret: string | undefined): Promise<void> {
    if (secret) await this.sessions.delete({ id: hashSecret(secret) });
  }
}
