import type { AuditBy } from '../audit/audit-events';

/**
 * Emitted (and awaited) once a sign-in factor of a person is removed, by them or by an operator's reset: a session or
 * grant opened with it, or by whoever it was keeping out, must not outlive it, so the authorization server ends the
 * person's sessions (all but `keptSession`, the one the person removed it in) and revokes their grants.
 */
export const SIGN_IN_FACTOR_REMOVED = 'mfa.sign-in-factor-removed';

export class SignInFactorRemovedEvent {
  constructor(
    readonly userId: string,
    /** Who removed it, and from which request: the consequences are audited as theirs. */
    readonly by: AuditBy,
    /** The id of the session that removed it, which stays; none for an operator's reset (every session ends). */
    readonly keptSession?: string,
  ) {}
}
