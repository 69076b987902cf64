import { createHash } from 'node:crypto';

/**
 * The lock that orders the removals of one person's sign-in factors (SqlRunner.locked): 16 hex digits of a
 * digest of their id. Two removals that would each leave the other factor as the last one then run one after the
 * other, and the second sees the first's outcome.
 */
export function factorsLockKey(userId: string): string {
  return createHash('sha256').update(`sign-in factors ${userId}`).digest('hex').slice(0, 16);
}
