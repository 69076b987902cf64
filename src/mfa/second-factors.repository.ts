import { Injectable } from '@nestjs/common';
import { lockedReadWrite } from '../database/locked-write';
import { SqlRunner, epochMs, expiredRowsDeletion, sql } from '../database/sql';
import { factorsLockKey } from './factors-lock';

/** A person's TOTP authenticator as stored: the secret (sealed when a key-encryption key is set). */
export interface TotpFactorRow {
  secret: string;
  confirmedAt: number | null;
  /** Every code is refused until then (epoch ms), after too many wrong ones in a row; null when not locked. */
  lockedUntil: number | null;
  /** Locks in a row, with no right code in between. */
  locks: number;
}

/** When a code of the authenticator is tried, counted beforehand: see {@link SecondFactorsRepository.tryTotp}. */
export interface TotpTries {
  /** Tries in a row, right ones aside, that lock the authenticator; and for how long (ms). */
  limit: number;
  lockMs: number;
  /** Locks in a row after which it stays locked until a right code of another kind (a recovery code) ends the count. */
  maxLocks: number;
}

/** A sign-in that waits for its second factor. */
export interface LoginChallengeRow {
  userId: string;
  returnTo: string;
  /** A step-up of a live session: that session's `amr` (space-separated); null for a sign-in from the password. */
  priorAmr: string | null;
}

const FIND_TOTP = sql`SELECT secret, confirmed_at, locked_until, locks FROM totp_factors WHERE user_id = :userId`;
/**
 * Counts a try of a code before it is checked, and only while the authenticator is not locked: one statement, so
 * parallel guesses each count and none passes a lock. The `:limit`-th try in a row locks it until `:until` (a
 * right code then lifts that at once); the first try after a lock (the count still at the limit) starts the count
 * again; after `:maxLocks` locks none passes. A right code ({@link USE_STEP}, {@link RESET_FAILURES}) ends both.
 */
const TRY_TOTP = sql`
  UPDATE totp_factors SET
    failures = CASE WHEN failures >= :limit THEN 1 ELSE failures + 1 END,
    locks = CASE WHEN failures + 1 = :limit THEN locks + 1 ELSE locks END,
    locked_until = CASE WHEN failures + 1 = :limit THEN :until ELSE locked_until END
  WHERE user_id = :userId AND confirmed_at IS NOT NULL AND locks < :maxLocks AND (locked_until IS NULL OR locked_until <= :now)`;
const RESET_FAILURES = sql`UPDATE totp_factors SET failures = 0, locks = 0, locked_until = NULL WHERE user_id = :userId`;
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
  UPDATE totp_factors SET last_step = :step, confirmed_at = COALESCE(confirmed_at, :now), failures = 0, locks = 0, locked_until = NULL
  WHERE user_id = :userId AND last_step < :step AND (confirmed_at IS NOT NULL OR :confirming = 1)`;
/**
 * The authenticator set up in a sign-in (MFA_REQUIRED_ROLES), confirmed by its first code (its step taken):
 * replaces an unconfirmed one, never a confirmed one.
 */
const PUT_CONFIRMED_TOTP = sql`
  INSERT INTO totp_factors (user_id, secret, created_at, confirmed_at, last_step) VALUES (:userId, :secret, :now, :now, :step)
  ON CONFLICT (user_id) DO UPDATE SET secret = :secret, created_at = :now, confirmed_at = :now, last_step = :step,
    failures = 0, locks = 0, locked_until = NULL
  WHERE totp_factors.confirmed_at IS NULL`;
const DELETE_UNCONFIRMED_TOTP = sql`DELETE FROM totp_factors WHERE user_id = :userId AND confirmed_at IS NULL`;
const DELETE_TOTP = sql`DELETE FROM totp_factors WHERE user_id = :userId`;
/** Whether the person has a confirmed authenticator, and how many passkeys: what a removal leaves. */
const FACTORS_OF = sql`
  SELECT
    (SELECT COUNT(*) FROM totp_factors WHERE user_id = :userId AND confirmed_at IS NOT NULL) AS totp,
    (SELECT COUNT(*) FROM passkeys WHERE user_id = :userId) AS passkeys`;
const DELETE_RECOVERY_CODES = sql`DELETE FROM recovery_codes WHERE user_id = :userId`;
const INSERT_RECOVERY_CODE = sql`INSERT INTO recovery_codes (code_hash, user_id, created_at, used_at) VALUES (:codeHash, :userId, :now, NULL)`;
/** By its keyed hash, or its plain SHA-256 when an instance of an earlier release stored it (keyed at the next start). */
const USE_RECOVERY_CODE = sql`
  UPDATE recovery_codes SET used_at = :now WHERE code_hash IN (:codeHash, :unkeyed) AND user_id = :userId AND used_at IS NULL`;
const UNUSED_RECOVERY_CODES = sql`SELECT COUNT(*) AS n FROM recovery_codes WHERE user_id = :userId AND used_at IS NULL`;
const INSERT_CHALLENGE = sql`
  INSERT INTO login_challenges (id, user_id, return_to, created_at, expires_at, tries, prior_amr)
  VALUES (:id, :userId, :returnTo, :now, :expiresAt, 0, :priorAmr)`;
/** Counts a try at the challenge and reads it, while it is live and has tries left. */
const TRY_CHALLENGE = sql`
  UPDATE login_challenges SET tries = tries + 1 WHERE id = :id AND expires_at > :now AND tries < :maxTries
  RETURNING user_id, return_to, prior_amr`;
/** The secret (sealed) of the authenticator being set up in a sign-in, bound to that sign-in only. */
const SET_CHALLENGE_TOTP = sql`UPDATE login_challenges SET totp_secret = :secret WHERE id = :id AND user_id = :userId`;
const CHALLENGE_TOTP = sql`SELECT totp_secret FROM login_challenges WHERE id = :id AND user_id = :userId`;
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
  constructor(private readonly db: SqlRunner) {}

  async findTotp(userId: string): Promise<TotpFactorRow | undefined> {
    const row = await this.db.one<{ secret: string; confirmed_at: unknown; locked_until: unknown; locks: unknown }>(FIND_TOTP, { userId });
    return (
      row && {
        secret: row.secret,
        confirmedAt: epochMs(row.confirmed_at, true),
        lockedUntil: epochMs(row.locked_until, true),
        locks: Number(row.locks),
      }
    );
  }

  /** Counts a try of a code of the confirmed authenticator (see {@link TRY_TOTP}); false when it is locked: not to be tried. */
  async tryTotp(userId: string, now: number, tries: TotpTries): Promise<boolean> {
    const params = { userId, now, limit: tries.limit, until: now + tries.lockMs, maxLocks: tries.maxLocks };
    return (await this.db.run(TRY_TOTP, params)).affected > 0;
  }

  /** A right code of another kind (a recovery code) ends the count of wrong ones and the locks. */
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

  /**
   * Binds a new authenticator's sealed secret to the sign-in `id` that sets it up, in place of any it had; an
   * unconfirmed one of the account page goes.
   */
  async bindEnrolment(id: string, userId: string, secret: string): Promise<void> {
    await this.db.atomic([
      { statement: DELETE_UNCONFIRMED_TOTP, params: { userId } },
      { statement: SET_CHALLENGE_TOTP, params: { id, userId, secret } },
    ]);
  }

  /** The sealed secret of the authenticator the sign-in `id` sets up; undefined when it sets up none. */
  async enrolmentOf(id: string, userId: string): Promise<string | undefined> {
    return (await this.db.one<{ totp_secret: string | null }>(CHALLENGE_TOTP, { id, userId }))?.totp_secret ?? undefined;
  }

  /** Stores the authenticator a sign-in set up, confirmed at `step`; false when the person has a confirmed one. */
  async putConfirmedTotp(userId: string, secret: string, step: number, now: number): Promise<boolean> {
    return (await this.db.run(PUT_CONFIRMED_TOTP, { userId, secret, step, now })).affected > 0;
  }

  /** Replaces the person's recovery codes (hashes) in one transaction. */
  async replaceRecoveryCodes(userId: string, codeHashes: string[], now: number): Promise<void> {
    await this.db.atomic([
      { statement: DELETE_RECOVERY_CODES, params: { userId } },
      ...codeHashes.map((codeHash) => ({ statement: INSERT_RECOVERY_CODE, params: { codeHash, userId, now } })),
    ]);
  }

  async useRecoveryCode(userId: string, codeHash: string, unkeyed: string, now: number): Promise<boolean> {
    return (await this.db.run(USE_RECOVERY_CODE, { userId, codeHash, unkeyed, now })).affected > 0;
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
      this.db,
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
