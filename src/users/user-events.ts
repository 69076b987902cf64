import type { AuditBy } from '../audit/audit-events';

/**
 * Emitted (and awaited) before a user and everything it owns is deleted, so that other modules can act on what
 * they keep about the user — the authorization server revokes the user's grants — without `users` knowing them.
 */
export const USER_DELETING = 'user.deleting';

export class UserDeletingEvent {
  constructor(readonly userId: string) {}
}

/**
 * Emitted (and awaited) once a person's password or email has been replaced: whoever held the old one may hold a
 * session or tokens, so the authorization server ends the person's sessions and grants.
 */
export const USER_PASSWORD_RESET = 'user.password-reset';

/** What replaced a person's credentials, and who: an operator's reset (`user:set-password`) unless `change` says. */
export interface CredentialChange {
  via: 'password change' | 'email change' | 'reset link';
  by: AuditBy;
  /** The grant of the token that made the change with the person's own proof: it goes on. */
  keepGrantId?: string;
}

export class UserPasswordResetEvent {
  constructor(
    readonly userId: string,
    readonly change?: CredentialChange,
  ) {}
}
