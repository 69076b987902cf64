import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { isDatabaseUnavailable } from '../../database/database-errors';
import { RefreshTokensRepository } from './refresh-tokens.repository';

/** How long after the mark is written a presentation again of the rotated token counts as the client's retry. */
export const LOST_ANSWER_RETRY_MS = 5 * 60_000;
/** How long an instance keeps trying to write a mark while the database stays away. */
const KEEP_TRYING_MS = 24 * 60 * 60_000;
/** Marks waiting at most: a longer outage under load keeps the newest. */
const MAX_PENDING = 100_000;

/**
 * Refresh rotations whose answer was lost with the database: the rotation may have committed while the client was
 * answered 503, and its retry with the same token would look like reuse and revoke the grant. Each is remembered
 * here and written to the token's row (`retry_until`) as soon as the database answers again, on whichever instance
 * answered 503; until then this instance counts a retry itself. A presentation again within the mark's time gets
 * the same successor once, while that is unused (the rotation grace's rule); any later one still revokes.
 */
@Injectable()
export class LostRotationAnswers {
  private readonly logger = new Logger(LostRotationAnswers.name);
  /** Rotated token hash → the rotation's time. */
  private readonly pending = new Map<string, number>();

  constructor(private readonly tokens: RefreshTokensRepository) {}

  /** The rotation of `tokenHash` at `rotatedAt` was answered 503 after the database went away. */
  record(tokenHash: string, rotatedAt: number): void {
    if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value!);
    this.pending.set(tokenHash, rotatedAt);
  }

  /** Whether this instance still holds an unwritten mark for the rotation of `tokenHash` at `rotatedAt`. */
  holds(tokenHash: string, rotatedAt: number): boolean {
    return this.pending.get(tokenHash) === rotatedAt;
  }

  /** Writes the marks waiting, each once the database takes it. */
  @Interval(1_000)
  async flush(): Promise<void> {
    for (const [tokenHash, rotatedAt] of this.pending) {
      if (Date.now() - rotatedAt > KEEP_TRYING_MS) {
        this.pending.delete(tokenHash);
        continue;
      }
      try {
        await this.tokens.markRetryable(tokenHash, rotatedAt, Date.now() + LOST_ANSWER_RETRY_MS);
        this.pending.delete(tokenHash);
      } catch (error) {
        if (!isDatabaseUnavailable(error)) this.logger.warn(`a lost rotation answer could not be marked: ${(error as Error).message}`);
        return;
      }
    }
  }
}
