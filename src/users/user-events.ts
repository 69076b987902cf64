/**
 * Emitted (and awaited) before a user and everything it owns is deleted, so that other modules can act on what
 * they keep about the user — the authorization server revokes the user's grants — without `users` knowing them.
 */
export const USER_DELETING = 'user.deleting';

export class UserDeletingEvent {
  constructor(readonly userId: string) {}
}
