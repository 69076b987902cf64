import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { In, IsNull, LessThan, MoreThan, Not, type Repository } from 'typeorm';
import { SqlRunner, sql } from '../database/sql';
import { factorsLockKey } from './factors-lock';
import { LoginChallenge } from './login-challenge.entity';
import { Passkey } from './passkey.entity';
import { RecoveryCode } from './recovery-code.entity';
import { TotpFactor } from './totp-factor.entity';
import { deleteBatchBefore } from '../database/prune-batch';

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

/**
 * Counts a try of a code before it is checked, and only while the authenticator is not locked: one statement, so
 * parallel guesses each count and none passes a lock. The `:limit`-th try in a row locks it until `:until` (a
 * right code then lifts that at once); the first try after a lock (the count still at the limit) starts the count
 * again; after `:maxLocks` locks none passes. A right code ({@link USE_STEP}, {@link SecondFactorsRepository.resetFailures}) ends both.
 * Hand-written: its SET computes each column from the row's own values (CASE), the lock's one guarded statement.
 */
const TRY_TOTP = sql`
  UPDATE totp_factors SET
    failures = CASE WHEN failures >= :limit THEN 1 ELSE failures + 1 END,
    locks = CASE WHEN failures + 1 = :limit THEN locks + 1 ELSE locks END,
    locked_until = CASE WHEN failures + 1 = :limit THEN :until ELSE locked_until END
  WHERE user_id = :userId AND confirmed_at IS NOT NULL AND locks < :maxLocks AND (locked_until IS NULL OR locked_until <= :now)`;
/**
 * A new (unconfirmed) authenticator replaces an unconfirmed one; a confirmed one stays until it is removed.
 * Hand-written (as PUT_CONFIRMED_TOTP): a conditional upsert whose affected-row count TypeORM's InsertResult lacks.
 */
const PUT_UNCONFIRMED_TOTP = sql`
  INSERT INTO totp_factors (user_id, secret, created_at, confirmed_at, last_step) VALUES (:userId, :secret, :now, NULL, 0)
  ON CONFLICT (user_id) DO UPDATE SET secret = :secret, created_at = :now, last_step = 0
  WHERE totp_factors.confirmed_at IS NULL`;
/**
 * Takes the code's time step, only if no later or equal step was taken: each code is accepted once, on any instance.
 * Hand-written: one winner, and a confirmation time kept from the row (COALESCE) in the same statement.
 */
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
/** Counts a try at the challenge and reads it, while it is live and has tries left (hand-written: UPDATE ... RETURNING, one winner). */
const TRY_CHALLENGE = sql`
  UPDATE login_challenges SET tries = tries + 1 WHERE id = :id AND expires_at > :now AND tries < :maxTries
  RETURNING user_id, return_to, prior_amr`;

/** The second-factor module's one way to its tables. */
@Injectable()
export class SecondFactorsRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The tables, in the current unit of work when there is one. */
  private get totp(): Repository<TotpFactor> {
    return this.transactions.tx.getRepository(TotpFactor);
  }

  private get recoveryCodes(): Repository<RecoveryCode> {
    return this.transactions.tx.getRepository(RecoveryCode);
  }

  private get challenges(): Repository<LoginChallenge> {
    return this.transactions.tx.getRepository(LoginChallenge);
  }

  async findTotp(userId: string): Promise<TotpFactorRow | undefined> {
    const row = await this.totp.findOne({ select: { secret: true, confirmedAt: true, lockedUntil: true, locks: true }, where: { userId } });
    return row ? { secret: row.secret, confirmedAt: row.confirmedAt, lockedUntil: row.lockedUntil, locks: row.locks } : undefined;
  }

  /** Counts a try of a code of the confirmed authenticator (see {@link TRY_TOTP}); false when it is locked: not to be tried. */
  async tryTotp(userId: string, now: number, tries: TotpTries): Promise<boolean> {
    const params = { userId, now, limit: tries.limit, until: now + tries.lockMs, maxLocks: tries.maxLocks };
    return (await this.db.run(TRY_TOTP, params)).affected > 0;
  }

  /** A right code of another kind (a recovery code) ends the count of wrong ones and the locks. */
  async resetFailures(userId: string): Promise<void> {
    await this.totp.update({ userId }, { failures: 0, locks: 0, lockedUntil: null });
  }

  /** Every stored secret (sealed or not), for a re-seal under a new key-encryption key. */
  async allTotpSecrets(): Promise<{ userId: string; secret: string }[]> {
    const rows = await this.totp.find({ select: { userId: true, secret: true } });
    return rows.map((row) => ({ userId: row.userId, secret: row.secret }));
  }

  /** Stores `sealed` in place of `was`; false when the row changed meanwhile (a new authenticator, a removal). */
  async resealTotp(userId: string, was: string, sealed: string): Promise<boolean> {
    return Boolean((await this.totp.update({ userId, secret: was }, { secret: sealed })).affected);
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
  bindEnrolment(id: string, userId: string, secret: string): Promise<void> {
    return this.transactions.withTransaction(async () => {
      await this.totp.delete({ userId, confirmedAt: IsNull() });
      await this.challenges.update({ id, userId }, { totpSecret: secret });
    });
  }

  /** The sealed secret of the authenticator the sign-in `id` sets up; undefined when it sets up none. */
  async enrolmentOf(id: string, userId: string): Promise<string | undefined> {
    return (await this.challenges.findOne({ select: { totpSecret: true }, where: { id, userId } }))?.totpSecret ?? undefined;
  }

  /** Stores the authenticator a sign-in set up, confirmed at `step`; false when the person has a confirmed one. */
  async putConfirmedTotp(userId: string, secret: string, step: number, now: number): Promise<boolean> {
    return (await this.db.run(PUT_CONFIRMED_TOTP, { userId, secret, step, now })).affected > 0;
  }

  /** Replaces the person's recovery codes (hashes) in one transaction. */
  replaceRecoveryCodes(userId: string, codeHashes: string[], now: number): Promise<void> {
    return this.transactions.withTransaction(async () => {
      await this.recoveryCodes.delete({ userId });
      if (codeHashes.length > 0)
        await this.recoveryCodes.insert(codeHashes.map((codeHash) => ({ codeHash, userId, createdAt: now, usedAt: null })));
    });
  }

  /** Marks an unused code of the person used (one conditional UPDATE: each code once); by its keyed hash or plain SHA-256. */
  async useRecoveryCode(userId: string, codeHash: string, unkeyed: string, now: number): Promise<boolean> {
    // The plain SHA-256 is how an instance of an earlier release stored it (keyed at the next start).
    const unused = { codeHash: In([codeHash, unkeyed]), userId, usedAt: IsNull() };
    return Boolean((await this.recoveryCodes.update(unused, { usedAt: now })).affected);
  }

  unusedRecoveryCodes(userId: string): Promise<number> {
    return this.recoveryCodes.count({ where: { userId, usedAt: IsNull() } });
  }

  /** Removes the authenticator, the recovery codes and pending sign-ins; true when there was an authenticator. */
  removeAll(userId: string): Promise<boolean> {
    return this.transactions.withTransaction(() => this.removal(userId));
  }

  /**
   * {@link removeAll}, unless `keepOne` and the person has no passkey: then nothing changes (`last`). Read and
   * removal hold the person's factors lock, so a passkey removed at the same moment cannot leave them with neither.
   */
  removeUnlessLast(userId: string, keepOne: boolean): Promise<'removed' | 'none' | 'last'> {
    return this.db.locked(factorsLockKey(userId), async () => {
      if ((await this.totp.count({ where: { userId, confirmedAt: Not(IsNull()) } })) === 0) return 'none';
      if (keepOne && (await this.transactions.tx.getRepository(Passkey).count({ where: { userId } })) === 0) return 'last';
      await this.removal(userId);
      return 'removed';
    });
  }

  /** Deletes a person's authenticator, recovery codes and pending sign-ins; whether there was an authenticator. */
  private async removal(userId: string): Promise<boolean> {
    const totp = (await this.totp.delete({ userId })).affected;
    await this.recoveryCodes.delete({ userId });
    await this.challenges.delete({ userId });
    return Boolean(totp);
  }

  async insertChallenge(
    id: string,
    userId: string,
    returnTo: string,
    now: number,
    expiresAt: number,
    priorAmr: string | null,
  ): Promise<void> {
    await this.challenges.insert({ id, userId, returnTo, createdAt: now, expiresAt, tries: 0, priorAmr });
  }

  async tryChallenge(id: string, now: number, maxTries: number): Promise<LoginChallengeRow | undefined> {
    const row = await this.db.one<{ user_id: string; return_to: string; prior_amr: string | null }>(TRY_CHALLENGE, { id, now, maxTries });
    return row && { userId: row.user_id, returnTo: row.return_to, priorAmr: row.prior_amr };
  }

  async peekChallenge(id: string, now: number, maxTries: number): Promise<LoginChallengeRow | undefined> {
    const row = await this.challenges.findOne({
      select: { userId: true, returnTo: true, priorAmr: true },
      where: { id, expiresAt: MoreThan(now), tries: LessThan(maxTries) },
    });
    return row ? { userId: row.userId, returnTo: row.returnTo, priorAmr: row.priorAmr } : undefined;
  }

  async deleteChallenge(id: string): Promise<void> {
    await this.challenges.delete({ id });
  }

  /** Up to `batch` sign-ins that expired before `cutoff` waiting for a code; how many (one statement, as the retention job's other deletes). */
  async deleteExpiredChallenges(cutoff: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.challenges, 'id', 'expires_at', cutoff, batch);
  }
}
