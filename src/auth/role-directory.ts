/**
 * Where the bearer guard learns a caller's role on routes open to some roles only. The users module provides it (roles live
 * with the users, not in the token, so a demotion takes effect at once); the guard finds it application-wide, so
 * the auth module does not depend on users.
 */
export abstract class RoleDirectory {
  /** The role of the user an access token names, or `undefined` when that user no longer exists. */
  abstract roleOf(userId: string): Promise<string | undefined>;
}
