import { Injectable } from '@nestjs/common';
import type { AuditContext } from '../../audit/audit-events';
import { acrOfStored, meetsAcr } from '../../auth/acr';
import { PasskeysService } from '../../mfa/passkeys.service';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { SignInFactorsService } from '../../mfa/sign-in-factors.service';
import { UsersService } from '../../users/users.service';
import type { CurrentSession } from './sessions.service';

export const ACCOUNT_SECURITY_PATH = '/account/security';
/** How recent a sign-in must be to add a person's first factor (GitHub's sudo mode asks the same of a password). */
export const RECENT_SIGN_IN_MS = 5 * 60_000;
/** Where a password-only session of a person with a factor confirms it is them before changing their factors. */
const STEP_UP_HREF = `/login/step-up?return_to=${encodeURIComponent(ACCOUNT_SECURITY_PATH)}&acr=aal2`;
export const CONFIRM_FIRST = 'To change how you sign in, first confirm it is you with your authenticator or a passkey.';
export const MANAGED_BY_CONNECTION = "Your sign-in is managed by your company's identity provider: add passkeys or authenticators there.";
export const RECENT_PASSWORD =
  'To add your first passkey or authenticator, enter your password again: your sign-in is more than 5 minutes old.';

/** Why a session may not change the person's factors, and where they confirm it is them first. */
export interface FactorChangeRefusal {
  error: string;
  confirmFirst: string;
}

/**
 * Who may change a person's sign-in factors, and what follows a removal. A factor is a way in without the password
 * (a passkey reaches `phr` alone), so a stolen session cookie must not add one: once the person has a factor, a
 * password-only session shows one first (step-up); before, the first one takes a password typed in the last few
 * minutes. A removal ends the person's other sessions and grants.
 */
@Injectable()
export class FactorChangeRules {
  constructor(
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly signInFactors: SignInFactorsService,
    private readonly users: UsersService,
  ) {}

  /** Why the session may not add a factor (`add`) or remove one (`remove`); undefined when it may. */
  async refusal(session: CurrentSession, change: 'add' | 'remove'): Promise<FactorChangeRefusal | undefined> {
    // A person a company identity provider signs in: a factor here would be a way in that outlives the provider's say.
    if (change === 'add' && !(await this.users.hasOwnPasswordById(session.userId)))
      return { error: MANAGED_BY_CONNECTION, confirmFirst: '' };
    const [totp, passkey] = await Promise.all([this.secondFactors.required(session.userId), this.passkeys.has(session.userId)]);
    const href = await this.confirmFirst(session, totp || passkey);
    if (!href || (change === 'remove' && !(totp || passkey))) return undefined;
    return { error: totp || passkey ? CONFIRM_FIRST : RECENT_PASSWORD, confirmFirst: href };
  }

  /**
   * Where the person confirms it is them before changing factors, or undefined when this session may: a password-only
   * session of a person with a factor steps up; a sign-in older than {@link RECENT_SIGN_IN_MS} of a person without one
   * gives the password again (the login form in this browser renews the session).
   */
  async confirmFirst(session: CurrentSession, hasFactor: boolean): Promise<string | undefined> {
    if (hasFactor) return passwordOnly(session) ? STEP_UP_HREF : undefined;
    if (Date.now() - session.authTime <= RECENT_SIGN_IN_MS) return undefined;
    const email = await this.users.emailOf(session.userId);
    const hint = email ? `&login_hint=${encodeURIComponent(email)}` : '';
    return `/login?return_to=${encodeURIComponent(ACCOUNT_SECURITY_PATH)}${hint}`;
  }

  /** After the person removed a factor in `session`: their other sessions end and their grants are revoked. */
  async removed(session: CurrentSession, context: AuditContext): Promise<void> {
    await this.signInFactors.removed(session.userId, { actor: `user:${session.userId}`, context }, session.id);
  }
}

/** Whether the session's sign-in was a password alone (below aal2). */
function passwordOnly(session: CurrentSession): boolean {
  return !meetsAcr(acrOfStored(session.amr), 'aal2');
}
