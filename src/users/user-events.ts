/**
 * Emitted (and awaited) before a user and everything it owns is deleted, so that other modules can act on what
 * they keep about the user — the authorization server revokes the user's grants — without `users` knowing them.
 */
export const USER_DELETING = 'user.deleting';

export class UserDeletingEvent {
  constructor(readonly userId: string) {}
}

/**
 * Emitted (and awaited) once an operator has replaced a person's password (`user:set-password`): whoever held the
 * old one may hold a session or tokens, so the authorization server ends the person's sessions and grants.
 */
export const USER_PASSWORD_RESET = 'user.password-reset';

export class UserPasswordResetEvent {
  constructor(readonly userId: string) {}
}
