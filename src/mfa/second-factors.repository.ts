import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { lockedReadWrite } from '../database/locked-write';
import { SqlRunner, epochMs, expiredRowsDeletion, sql } from '../database/sql';
import { factorsLockKey } from './factors-lock';

/** A person's TOTP authenticator as stored: the secret (sealed when a key-encryption key is set). */
export interface TotpFactorRow {
  secret: string;
  confirmedAt: number | null;
  /** Every code is refused until then (epoch ms), after too many wrong ones in a row; null when not locked. */
  lockedUntil: number | null;
}

/** A sign-in that waits for its second factor. */
export interface LoginChallengeRow {
  userId: string;
  returnTo: string;
  /** A step-up of a live session: that session's `amr` (space-separated); null for a sign-in from the password. */
  priorAmr: string | null;
}

const FIND_TOTP = sql`SELECT secret, confirmed_at, locked_until FROM totp_factors WHERE user_id = :userId`;
/** One more wrong code; the `:limit`-th in a row locks the authenticator until `:until` (and starts the count again). */
const COUNT_FAILURE = sql`
  UPDATE totp_factors SET
    locked_until = CASE WHEN failures + 1 >= :limit THEN :until ELSE locked_until END,
    failures = CASE WHEN failures + 1 >= :limit THEN 0 ELSE failures + 1 END
  WHERE user_id = :userId`;
const RESET_FAILURES = sql`UPDATE totp_factors SET failures = 0 WHERE user_id = :userId AND failures > 0`;
const ALL_TOTP_SECRETS = sql`SELECT user_id, secret FROM totp_factors`;
/** Replaces a secret by the same one sealed anew, unless the row changed since it was read. */
const RESEAL_TOTP = sql`UPDATE totp_factors SET secret = :sealed WHERE user_id = :userId AND secret = :was`;
/** A new (unconfirmed) authenticator replaces an unconfirmed one; a confirmed one stays until it is removed. */
const PUT_UNCONFIRMED_TOTP = sql`
  INSERT INTO totp_factors (user_id, secret, created_at, confirmed_at, last_step) VALUES (:userId, :secret, :now, NULL, 0)
  ON CONFLICT (user_id) DO UPDATE SET secret = :secret, created_at = :now, last_step = 0
  WHERE totp_factors.confirmed_at IS NULL`;
/** Takes the code's time step, only if no later or equal step was taken: each code is accepted once, on any instance. */
const USE_STEP = sql`
  UPDATE totp_factors SET last_step = :step, confirmed_at = COALESCE(confirmed_at, :now), failures = 0
  WHERE user_id = :userId AND last_step < :step AND (confirmed_at IS NOT NULL OR :confirming = 1)`;
const DELETE_TOTP = sql`DELETE FROM totp_factors WHERE user_id = :userId`;
/** Whether the person has a confirmed authenticator, and how many passkeys: what a removal leaves. */
const FACTORS_OF = sql`
  SELECT
    (SELECT COUNT(*) FROM totp_factors WHERE user_id = :userId AND confirmed_at IS NOT NULL) AS totp,
    (SELECT COUNT(*) FROM passkeys WHERE user_id = :userId) AS passkeys`;
const DELETE_RECOVERY_CODES = sql`DELETE FROM recovery_codes WHERE user_id = :userId`;
const INSERT_RECOVERY_CODE = sql`INSERT INTO recovery_codes (code_hash, user_id, created_at, used_at) VALUES (:codeHash, :userId, :now, NULL)`;
const USE_RECOVERY_CODE = sql`UPDATE recovery_codes SET used_at = :now WHERE code_hash = :codeHash AND user_id = :userId AND used_at IS NULL`;
const UNUSED_RECOVERY_CODES = sql`SELECT COUNT(*) AS n FROM recovery_codes WHERE user_id = :userId AND used_at IS NULL`;
const INSERT_CHALLENGE = sql`
  INSERT INTO login_challenges (id, user_id, return_to, created_at, expires_at, tries, prior_amr)
  VALUES (:id, :userId, :returnTo, :now, :expiresAt, 0, :priorAmr)`;
/** Counts a try at the challenge and reads it, while it is live and has tries left. */
const TRY_CHALLENGE = sql`
  UPDATE login_challenges SET tries = tries + 1 WHERE id = :id AND expires_at > :now AND tries < :maxTries
  RETURNING user_id, return_to, prior_amr`;
const PEEK_CHALLENGE = sql`
  SELECT user_id, return_to, prior_amr FROM login_challenges WHERE id = :id AND expires_at > :now AND tries < :maxTries`;
const DELETE_CHALLENGE = sql`DELETE FROM login_challenges WHERE id = :id`;
const DELETE_CHALLENGES = sql`DELETE FROM login_challenges WHERE user_id = :userId`;
/** Planned at each run with its cutoff (as the retention job's other deletes; see RetentionRepository). */
const DELETE_EXPIRED_CHALLENGES = expiredRowsDeletion('login_challenges');

interface ChallengeRow {
  user_id: string;
  return_to: string;
  prior_amr: string | null;
}

function challengeOf(row: ChallengeRow): LoginChallengeRow {
  return { userId: row.user_id, returnTo: row.return_to, priorAmr: row.prior_amr };
}

/** The second-factor module's one way to its tables. */
@Injectable()
export class SecondFactorsRepository {
  constructor(
    private readonly db: SqlRunner,
    private readonly dataSource: DataSource,
  ) {}

  async findTotp(userId: string): Promise<TotpFactorRow | undefined> {
    const row = await this.db.one<{ secret: string; confirmed_at: unknown; locked_until: unknown }>(FIND_TOTP, { userId });
    return row && { secret: row.secret, confirmedAt: epochMs(row.confirmed_at, true), lockedUntil: epochMs(row.locked_until, true) };
  }

  /** Counts a wrong code; the `limit`-th in a row locks the authenticator until `until`. */
  async countFailure(userId: string, limit: number, until: number): Promise<void> {
    await this.db.run(COUNT_FAILURE, { userId, limit, until });
  }

  /** A right code (a recovery code) ends the count of wrong ones. */
  async resetFailures(userId: string): Promise<void> {
    await this.db.run(RESET_FAILURES, { userId });
  }

  /** Every stored secret (sealed or not), for a re-seal under a new key-encryption key. */
  async allTotpSecrets(): Promise<{ userId: string; secret: string }[]> {
    const rows = (await this.db.run<{ user_id: string; secret: string }>(ALL_TOTP_SECRETS)).rows;
    return rows.map((row) => ({ userId: row.user_id, secret: row.secret }));
  }

  /** Stores `sealed` in place of `was`; false when the row changed meanwhile (a new authenticator, a removal). */
  async resealTotp(userId: string, was: string, sealed: string): Promise<boolean> {
    return (await this.db.run(RESEAL_TOTP, { userId, was, sealed })).affected > 0;
  }

  /** Stores a new unconfirmed authenticator; false when the person has a confirmed one. */
  async putUnconfirmedTotp(userId: string, secret: string, now: number): Promise<boolean> {
    return (await this.db.run(PUT_UNCONFIRMED_TOTP, { userId, secret, now })).affected > 0;
  }

  /** Takes a code's time step (and confirms the authenticator when `confirming`); false when it was used or is older. */
  async useStep(userId: string, step: number, now: number, confirming: boolean): Promise<boolean> {
    return (await this.db.run(USE_STEP, { userId, step, now, confirming: confirming ? 1 : 0 })).affected > 0;
  }

  /** Replaces the person's recovery codes (hashes) in one transaction. */
  async replaceRecoveryCodes(userId: string, codeHashes: string[], now: number): Promise<void> {
    await this.db.atomic([
      { statement: DELETE_RECOVERY_CODES, params: { userId } },
      ...codeHashes.map((codeHash) => ({ statement: INSERT_RECOVERY_CODE, params: { codeHash, userId, now } })),
    ]);
  }

  async useRecoveryCode(userId: string, codeHash: string, now: number): Promise<boolean> {
    return (await this.db.run(USE_RECOVERY_CODE, { userId, codeHash, now })).affected > 0;
  }

  async unusedRecoveryCodes(userId: string): Promise<number> {
    return Number((await this.db.one<{ n: unknown }>(UNUSED_RECOVERY_CODES, { userId }))?.n ?? 0);
  }

  /** Removes the authenticator, the recovery codes and pending sign-ins; true when there was an authenticator. */
  async removeAll(userId: string): Promise<boolean> {
    const [totp] = await this.db.atomic(removalOf(userId));
    return totp > 0;
  }

  /**
   * {@link removeAll}, unless `keepOne` and the person has no passkey: then nothing changes (`last`). Read and
   * removal hold the person's factors lock, so a passkey removed at the same moment cannot leave them with neither.
   */
  removeUnlessLast(userId: string, keepOne: boolean): Promise<'removed' | 'none' | 'last'> {
    return lockedReadWrite<{ totp: unknown; passkeys: unknown }, 'removed' | 'none' | 'last'>(
      this.dataSource,
      factorsLockKey(userId),
      { statement: FACTORS_OF, params: { userId } },
      ([left]) => {
        if (Number(left.totp) === 0) return { writes: [], result: 'none' };
        if (keepOne && Number(left.passkeys) === 0) return { writes: [], result: 'last' };
        return { writes: removalOf(userId), result: 'removed' };
      },
    );
  }

  async insertChallenge(
    id: string,
    userId: string,
    returnTo: string,
    now: number,
    expiresAt: number,
    priorAmr: string | null,
  ): Promise<void> {
    await this.db.run(INSERT_CHALLENGE, { id, userId, returnTo, now, expiresAt, priorAmr });
  }

  async tryChallenge(id: string, now: number, maxTries: number): Promise<LoginChallengeRow | undefined> {
    const row = await this.db.one<ChallengeRow>(TRY_CHALLENGE, { id, now, maxTries });
    return row && challengeOf(row);
  }

  async peekChallenge(id: string, now: number, maxTries: number): Promise<LoginChallengeRow | undefined> {
    const row = await this.db.one<ChallengeRow>(PEEK_CHALLENGE, { id, now, maxTries });
    return row && challengeOf(row);
  }

  async deleteChallenge(id: string): Promise<void> {
    await this.db.run(DELETE_CHALLENGE, { id });
  }

  /** Up to `batch` sign-ins that expired before `cutoff` waiting for a code; how many. */
  async deleteExpiredChallenges(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED_CHALLENGES, { cutoff, batch })).affected;
  }
}

/** The writes that remove a person's authenticator, recovery codes and pending sign-ins. */
function removalOf(userId: string) {
  return [
    { statement: DELETE_TOTP, params: { userId } },
    { statement: DELETE_RECOVERY_CODES, params: { userId } },
    { statement: DELETE_CHALLENGES, params: { userId } },
  ];
}
