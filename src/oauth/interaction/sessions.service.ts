import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { type AuditContext, NO_REQUEST } from '../../audit/audit-events';
import { USER_PASSWORD_RESET, type UserPasswordResetEvent } from '../../users/user-events';
import { SIGN_IN_FACTOR_REMOVED, type SignInFactorRemovedEvent } from '../../mfa/factor-events';
import { AuditService } from '../../audit/audit.service';
import type { Session } from '../entities/session.entity';
import { type SessionRecord, SessionsRepository } from './sessions.repository';
import { OAuthConfig } from '../oauth.config';
import { hashSecret, randomSecret } from '../../crypto/secrets';
import type { AuthenticationMethods } from '../../mfa/authentication-methods';

export interface StartedSession {
  session: Session;
  /** The cookie value: shown to the browser once, stored only as its hash (the session id). */
  secret: string;
}

/** A live session as the authorization endpoint reads it. */
export interface CurrentSession extends Omit<SessionRecord, 'consentedScope'> {
  /** The scopes the user has granted the client asked about (see {@link SessionsService.current}). */
  consented?: Set<string>;
}

/** Why a session ended, in its `logout` event. */
export type LogoutVia =
  | 'logout form'
  | 'end session'
  | 'end session confirmed'
  | 'account switch'
  | 'password reset'
  | 'reset link'
  | 'password change'
  | 'email change'
  | 'factor removed';

/** How a person signed in, in RFC 8176's words (`amr`). */
export type { AuthenticationMethods };

/** Login sessions, in the database so that any instance recognises them. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly config: OAuthConfig,
    private readonly audit: AuditService,
  ) {}

  /** Starts a new session (never reusing an old id), with its `login.succeeded` event. */
  async start(userId: string, context: AuditContext, amr: AuthenticationMethods = ['pwd']): Promise<StartedSession> {
    const secret = randomSecret(32);
    const now = Date.now();
    const session: Session = {
      id: hashSecret(secret),
      userId,
      csrfToken: randomSecret(24),
      createdAt: now,
      expiresAt: now + this.config.sessionTtl * 1000,
      authTime: now,
      sid: randomUUID(),
      amr: amr.join(' '),
    };
    const by = { actor: `user:${userId}` as const, context };
    await this.audit.recorded({ type: 'login.succeeded', userId }, by, [SessionsRepository.insertOf(session)]);
    return { session, secret };
  }

  /**
   * The live session a cookie value names, if any. With `consentOf` (a client id), also the scopes its user has
   * already granted that client, read in the same query.
   */
  async current(secret: string | undefined, consentOf?: string): Promise<CurrentSession | undefined> {
    const id = this.idOf(secret);
    if (id === undefined) return undefined;
    const row = await this.sessions.find(id, consentOf);
    if (!row || row.expiresAt <= Date.now()) return undefined;
    const { consentedScope, ...session }: CurrentSession & { consentedScope?: string } = row;
    if (consentedScope !== undefined) session.consented = new Set(consentedScope.split(' ').filter(Boolean));
    return session;
  }

  /**
   * A new login of the session's own user (OpenID Connect `prompt=login`, `max_age`): the session keeps its `sid`,
   * its `auth_time` becomes now and it gets a new CSRF token, with a `login.succeeded` event; the new cookie value, or undefined when the session
   * had ended meanwhile.
   */
  async reauthenticate(
    session: Pick<CurrentSession, 'id' | 'userId'>,
    context: AuditContext,
    amr: AuthenticationMethods = ['pwd'],
  ): Promise<string | undefined> {
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
      amr: amr.join(' '),
    };
    if (!(await this.sessions.reauthenticate(params, event))) return undefined;
    this.audit.log(event);
    return secret;
  }

  /** After a person's password or email was replaced (see `UserPasswordResetEvent`): every session of theirs ends (one `logout` event). */
  @OnEvent(USER_PASSWORD_RESET, { promisify: true, suppressErrors: false })
  async endAllOnPasswordReset(event: UserPasswordResetEvent): Promise<void> {
    const { change } = event;
    const details = { via: (change?.via ?? 'password reset') satisfies LogoutVia, every: true };
    const logout = AuditService.event(
      { type: 'logout', actor: change?.by.actor ?? 'system', userId: event.userId, details },
      change?.by.context ?? NO_REQUEST,
    );
    await this.sessions.deleteAllOf(event.userId, logout);
    this.audit.log(logout);
  }

  /**
   * After a sign-in factor of the person was removed: every session of theirs ends but the one that removed it (one
   * `logout` event, when any did), among them any a stolen cookie kept open.
   */
  @OnEvent(SIGN_IN_FACTOR_REMOVED, { promisify: true, suppressErrors: false })
  async endOthersOnFactorRemoval(event: SignInFactorRemovedEvent): Promise<void> {
    const which: Record<string, boolean> = event.keptSession === undefined ? { every: true } : { others: true };
    const details = { via: 'factor removed' satisfies LogoutVia, ...which };
    const logout = AuditService.event({ type: 'logout', actor: event.by.actor, userId: event.userId, details }, event.by.context);
    if ((await this.sessions.deleteOthersOf(event.userId, event.keptSession, logout)) > 0) this.audit.log(logout);
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
    if (await this.sessions.delete(id, event)) this.audit.log(event);
  }

  /** The session id a cookie value stands for (its hash); undefined for a value no session could have. */
  idOf(secret: string | undefined): string | undefined {
    return !secret || secret.length > 100 ? undefined : hashSecret(secret);
  }
}
