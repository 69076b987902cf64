import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Request, Response } from 'express';
import { LessThan, type Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { clearCookie, readCookie, setCookie } from './cookies';
import { Session } from './entities/session.entity';
import { hashSecret, randomSecret } from './secrets';

export const SESSION_COOKIE = 'oauth_session';

/** Login sessions, in the database so that any instance recognises them. */
@Injectable()
export class SessionsService {
  constructor(
    @InjectRepository(Session) private readonly sessions: Repository<Session>,
    private readonly config: AppConfig,
  ) {}

  /** Starts a new session (never reusing an old id) and sets its cookie. */
  async start(res: Response, userId: string): Promise<Session> {
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
    setCookie(res, SESSION_COOKIE, secret, { maxAgeSeconds: this.config.sessionTtl, secure: this.config.secureCookies });
    if (Math.random() < 0.01) void this.sessions.delete({ expiresAt: LessThan(now) }).catch(() => undefined);
    return session;
  }

  /** The live session of this request, if any. */
  async current(req: Request): Promise<Session | undefined> {
    const secret = readCookie(req, SESSION_COOKIE);
    if (!secret || secret.length > 100) return undefined;
    const session = await this.sessions.findOne({ where: { id: hashSecret(secret) } });
    if (!session || session.expiresAt <= Date.now()) return undefined;
    return session;
  }

  async end(req: Request, res: Response): Promise<void> {
    const secret = readCookie(req, SESSION_COOKIE);
    if (secret) await this.sessions.delete({ id: hashSecret(secret) });
    clearCookie(res, SESSION_COOKIE, this.config.secureCookies);
  }
}
