import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { isDatabaseUnavailable } from '../../database/database-errors';
import { CodesRepository } from './codes.repository';
import { RefreshTokensRepository } from './refresh-tokens.repository';

/** How long after the mark is written a presentation again counts as the client's retry. */
const LOST_ANSWER_RETRY_MS = 5 * 60_000;
/** How long an instance keeps trying to write a mark while the database stays away. */
const KEEP_TRYING_MS = 24 * 60 * 60_000;
/** Marks waiting at most: a longer outage under load keeps the newest. */
const MAX_PENDING = 100_000;

type Kind = 'rotation' | 'redemption';

/**
 * Refresh rotations and code redemptions whose answer was lost with the database: the write may have committed
 * while the client was answered 503, and its retry with the same token or code would look like reuse and revoke
 * the grant. Each is remembered here and written to its row (`retry_until`) as soon as the database answers again,
 * on whichever instance answered 503; until then this instance counts a retry itself. A presentation again within
 * the mark's time is answered once (a rotation: the same successor while it is unused; a redemption: new tokens
 * of the same grant, after the same checks); any later one still revokes.
 */
@Injectable()
export class LostAnswers {
  private readonly logger = new Logger(LostAnswers.name);
  /** Kind and hash of the token or code → the time of its rotation or redemption. */
  private readonly pending = new Map<string, number>();

  constructor(
    private readonly tokens: RefreshTokensRepository,
    private readonly codes: CodesRepository,
  ) {}

  /** The rotation of the token (or redemption of the code) `hash` at `at` was answered 503 after the database went away. */
  record(kind: Kind, hash: string, at: number): void {
    if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value!);
    this.pending.set(`${kind}:${hash}`, at);
  }

  /** Whether this instance still holds an unwritten mark for that rotation or redemption. */
  holds(kind: Kind, hash: string, at: number): boolean {
    return this.pending.get(`${kind}:${hash}`) === at;
  }

  /** Writes the marks waiting, each once the database takes it. */
  @Interval('lost-answers.mark', 1_000)
  async flush(): Promise<void> {
    for (const [key, at] of this.pending) {
      if (Date.now() - at > KEEP_TRYING_MS) {
        this.pending.delete(key);
        continue;
      }
      const [kind, hash] = key.split(':') as [Kind, string];
      const until = Date.now() + LOST_ANSWER_RETRY_MS;
      try {
        if (kind === 'rotation') await this.tokens.markRetryable(hash, at, until);
        else await this.codes.markRetryable(hash, at, until);
        this.pending.delete(key);
      } catch (error) {
        if (!isDatabaseUnavailable(error)) this.logger.warn(`a lost answer could not be marked: ${(error as Error).message}`);
        return;
      }
    }
  }
}
