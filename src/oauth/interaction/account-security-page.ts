import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { safeEqual } from '../../crypto/secrets';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { PASSKEY_NAME_MAX, PasskeysService } from '../../mfa/passkeys.service';
import { CONTROL_CHARACTER } from '../../common/text';
import { sessionCookie } from './cookies';
import { UsersService } from '../../users/users.service';
import { type AccountSecurityPageView, OAuthPages, sendHtml } from './pages';
import { type CurrentSession, SessionsService } from './sessions.service';
import { ACCOUNT_SECURITY_PATH, FactorChangeRules } from './factor-change-rules';

const BACK = { href: ACCOUNT_SECURITY_PATH, label: 'Back to sign-in security' };

/** What the sign-in security page's routes share: its session checks, the factor-change rules, and the page itself. */
@Injectable()
export class AccountSecurityPage {
  constructor(
    private readonly sessions: SessionsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly users: UsersService,
    private readonly pages: OAuthPages,
    private readonly rules: FactorChangeRules,
  ) {}

  /** When the session may not make this change (see FactorChangeRules): answers 403 with the way on, and returns true. */
  async confirmFirst(res: Response, session: CurrentSession, change: 'add' | 'remove'): Promise<boolean> {
    const refused = await this.rules.refusal(session, change);
    if (refused) await this.render(res, 403, session, refused);
    return refused !== undefined;
  }

  /** Whether the person's role needs a second factor (MFA_REQUIRED_ROLES). */
  async policyNeedsFactor(userId: string): Promise<boolean> {
    const role = await this.users.roleOf(userId);
    return role !== undefined && this.secondFactors.requiredFor(role);
  }

  /** The session of a form post whose CSRF token matches it; else answers 403 and returns undefined. */
  async checkedSession(req: Request, res: Response): Promise<CurrentSession | undefined> {
    const session = await this.postedBySession(req);
    if (!session) sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Sign in and try again.', BACK));
    return session;
  }

  /** The login session of a post (a form, or the page's JSON) whose CSRF token is that session's; else undefined. */
  async postedBySession(req: Request): Promise<CurrentSession | undefined> {
    const csrf = ((req.body ?? {}) as Record<string, unknown>).csrf;
    const session = await this.sessions.current(sessionCookie.read(req));
    return session && typeof csrf === 'string' && safeEqual(csrf, session.csrfToken) ? session : undefined;
  }

  async render(res: Response, status: number, session: CurrentSession, extra: Partial<AccountSecurityPageView> = {}): Promise<void> {
    const [state, passkeys, email] = await Promise.all([
      this.secondFactors.status(session.userId),
      this.passkeys.list(session.userId),
      this.users.emailOf(session.userId),
    ]);
    const confirmFirst = await this.rules.confirmFirst(session, state.totp === 'active' || passkeys.length > 0);
    const view = {
      csrf: session.csrfToken,
      signedInAs: email ?? '',
      ...state,
      passkeys,
      ...(confirmFirst ? { confirmFirst } : {}),
      ...extra,
    };
    sendHtml(res, status, this.pages.accountSecurity(view));
  }
}

export function codeOf(req: Request): string {
  return fieldOf(req, 'code', 32);
}

/** A form field as text, cut at `max` characters; empty when absent. */
export function fieldOf(req: Request, name: string, max: number): string {
  const value = ((req.body ?? {}) as Record<string, unknown>)[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}

/** A passkey's name as typed (trimmed; empty when none), or undefined when too long or with control characters. */
export function nameOf(req: Request): string | undefined {
  const value = ((req.body ?? {}) as Record<string, unknown>).name;
  const name = typeof value === 'string' ? value.trim() : '';
  return name.length > PASSKEY_NAME_MAX || CONTROL_CHARACTER.test(name) ? undefined : name;
}
