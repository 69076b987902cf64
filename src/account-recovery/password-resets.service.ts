import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter2, OnEvent } from '@nestjs/event-emitter';
import type { AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { AppConfig } from '../config/app-config';
import { hashSecret, randomSecret } from '../crypto/secrets';
import { Mailer } from '../mail/mailer';
import { USER_PASSWORD_RESET, UserPasswordResetEvent } from '../users/user-events';
import { PasswordHasher } from '../users/password-hasher';
import { UsersService } from '../users/users.service';
import { PasswordResetsRepository } from './password-resets.repository';

/** How long a reset link works: long enough to reach a mailbox, short enough that an old mail is no way in. */
const RESET_LINK_TTL_MS = 15 * 60_000;
/** A reset token: 32 random bytes, base64url (as every secret of the service). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * "Forgot password" for local accounts: a single-use link, valid {@link RESET_LINK_TTL_MS}, mailed to the address;
 * the table keeps only its hash. Asking answers the same whether or not the address has an account; using it sets
 * the password and ends the person's sessions and grants.
 */
@Injectable()
export class PasswordResetsService {
  private readonly logger = new Logger(PasswordResetsService.name);

  constructor(
    private readonly resets: PasswordResetsRepository,
    private readonly users: UsersService,
    private readonly hasher: PasswordHasher,
    private readonly mailer: Mailer,
    private readonly audit: AuditService,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly events: EventEmitter2,
    private readonly config: AppConfig,
  ) {}

  /** Whether links can be sent (mail is configured, or logged in development). */
  get available(): boolean {
    return this.mailer.available;
  }

  /**
   * Sends a reset link to `email` if a person has that address, after the caller has answered: the answer, and its
   * time, are the same either way. Failures are logged, never shown.
   */
  requestInBackground(email: string, context: AuditContext): void {
    setImmediate(
      () => void this.request(email, context).catch((error: unknown) => this.logger.error(`reset mail not sent: ${String(error)}`)),
    );
  }

  async request(email: string, context: AuditContext): Promise<void> {
    const person = await this.users.credentials(email);
    // Nobody, or someone a company identity provider signs in: they never get a password here.
    if (!person || !UsersService.hasOwnPassword(person)) return;
    const token = randomSecret(32);
    const now = Date.now();
    const event = AuditService.event({ type: 'user.password_reset_sent', actor: 'anonymous', userId: person.id }, context, now);
    await this.transactions.withTransaction(async () => {
      await this.resets.insert(hashSecret(token), person.id, now, now + RESET_LINK_TTL_MS);
      await this.audit.write(event);
    });
    this.audit.log(event);
    const link = new URL('/reset-password', this.config.issuer);
    link.searchParams.set('token', token);
    // The stored address, not the one typed: lower-casing maps some characters (the Kelvin sign) to others.
    const to = await this.users.emailOf(person.id);
    if (!to) return;
    await this.mailer.send({
      to,
      subject: 'Reset your password',
      text: `Someone asked to reset the password of your account. If it was you, open this link within 15 minutes:\n\n${link.href}\n\nIf it was not you, ignore this message: your password stays as it is.\n`,
    });
  }

  /** Any other change of the person's password or e-mail (or this reset) ends the links already sent. */
  @OnEvent(USER_PASSWORD_RESET, { promisify: true, suppressErrors: false })
  async onCredentialsChanged(event: UserPasswordResetEvent): Promise<void> {
    await this.resets.endAll(event.userId, Date.now());
  }

  /** Whether a link's token is live and unused (the form is shown only then). */
  async isLive(token: string): Promise<boolean> {
    return TOKEN.test(token) && (await this.resets.find(hashSecret(token), Date.now())) !== undefined;
  }

  /**
   * Sets the password of the link's person (once: a second use, or one after its time, is false), ends their other
   * links, and then their sessions and grants (`user.password-reset`).
   */
  async reset(token: string, password: string, context: AuditContext): Promise<boolean> {
    if (!TOKEN.test(token)) return false;
    const tokenHash = hashSecret(token);
    const userId = await this.resets.find(tokenHash, Date.now());
    // The password is hashed (argon2id, the slow part) only for a live link, and before the unit.
    if (!userId) return false;
    const passwordHash = await this.hasher.hash(password);
    const now = Date.now();
    const by = { actor: `user:${userId}` as const, context };
    const event = AuditService.event(
      { type: 'user.password_changed', actor: by.actor, userId, details: { proof: 'reset link' } },
      context,
      now,
    );
    const done = await this.transactions.withTransaction(async () => {
      if (!(await this.resets.use(tokenHash, now)) || !(await this.users.replacePasswordHash(userId, passwordHash))) return false;
      await this.resets.endAll(userId, now);
      await this.audit.write(event);
      return true;
    });
    if (!done) return false;
    this.audit.log(event);
    await this.events.emitAsync(USER_PASSWORD_RESET, new UserPasswordResetEvent(userId, { via: 'reset link', by }));
    return true;
  }
}
