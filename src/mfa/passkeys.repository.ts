import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull, Not, type Repository } from 'typeorm';
import { SqlRunner, sql } from '../database/sql';
import { factorsLockKey } from './factors-lock';
import { Passkey } from './passkey.entity';
import { TotpFactor } from './totp-factor.entity';
import { WebauthnChallenge } from './webauthn-challenge.entity';
import { deleteBatchBefore } from '../database/prune-batch';

/** What a WebAuthn challenge was handed out for. */
export type ChallengePurpose = 'register' | 'sign-in' | 'second-factor';

/** A person's passkey as stored. */
export interface PasskeyRow {
  id: string;
  userId: string;
  name: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  signCount: number;
  transports: string[];
  aaguid: string;
  deviceType: 'singleDevice' | 'multiDevice';
  backedUp: boolean;
  createdAt: number;
  lastUsedAt: number | null;
}

export interface TakenChallenge {
  challenge: string;
  purpose: ChallengePurpose;
  userId: string | null;
}

// Hand-written: whether ON CONFLICT DO NOTHING inserted is its affected-row count, which TypeORM's InsertResult lacks on SQLite.
const INSERT = sql`
  INSERT INTO passkeys (id, user_id, name, public_key, sign_count, transports, aaguid, device_type, backed_up, created_at, last_used_at)
  VALUES (:id, :userId, :name, :publicKey, :signCount, :transports, :aaguid, :deviceType, :backedUp, :now, NULL)
  ON CONFLICT (id) DO NOTHING`;
/**
 * A sign-in with the passkey: its new counter (never lower than the stored one, so that of two racing sign-ins the
 * later counter stays), its backup state, when. Hand-written: the counter is chosen from the row's own (CASE).
 */
const USED = sql`
  UPDATE passkeys SET sign_count = CASE WHEN sign_count < :signCount THEN :signCount ELSE sign_count END,
    backed_up = :backedUp, last_used_at = :now
  WHERE id = :id AND user_id = :userId`;
/**
 * Takes the challenge: the one statement that reads it also deletes it, so an answer is checked against it once.
 * Hand-written: DELETE ... RETURNING.
 */
const TAKE_CHALLENGE = sql`
  DELETE FROM webauthn_challenges WHERE id = :id AND expires_at > :now RETURNING challenge, purpose, user_id`;

function passkeyOf(row: Passkey): PasskeyRow {
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    publicKey: row.publicKey,
    signCount: row.signCount,
    transports: row.transports ? row.transports.split(',') : [],
    aaguid: row.aaguid,
    deviceType: row.deviceType === 'multiDevice' ? 'multiDevice' : 'singleDevice',
    backedUp: Boolean(row.backedUp),
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
  };
}

/** The passkeys' one way to their tables. */
@Injectable()
export class PasskeysRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The tables, in the current unit of work when there is one. */
  private get passkeys(): Repository<Passkey> {
    return this.transactions.tx.getRepository(Passkey);
  }

  private get challenges(): Repository<WebauthnChallenge> {
    return this.transactions.tx.getRepository(WebauthnChallenge);
  }

  async find(id: string): Promise<PasskeyRow | undefined> {
    const row = await this.passkeys.findOne({ where: { id } });
    return row ? passkeyOf(row) : undefined;
  }

  async ofUser(userId: string): Promise<PasskeyRow[]> {
    return (await this.passkeys.find({ where: { userId }, order: { createdAt: 'ASC', id: 'ASC' } })).map(passkeyOf);
  }

  countOf(userId: string): Promise<number> {
    return this.passkeys.count({ where: { userId } });
  }

  /** Stores a new passkey; false when a passkey with that credential id exists (the person's or anyone's). */
  async insert(passkey: Omit<PasskeyRow, 'createdAt' | 'lastUsedAt'>, now: number): Promise<boolean> {
    const params = { ...passkey, transports: passkey.transports.join(','), now };
    return (await this.db.run(INSERT, params)).affected > 0;
  }

  async used(id: string, userId: string, signCount: number, backedUp: boolean, now: number): Promise<void> {
    await this.db.run(USED, { id, userId, signCount, backedUp, now });
  }

  async rename(id: string, userId: string, name: string): Promise<boolean> {
    return Boolean((await this.passkeys.update({ id, userId }, { name })).affected);
  }

  /**
   * Deletes one of the person's passkeys, unless `keepOne` and it is their last factor (no other passkey, no
   * authenticator): its name, `last`, or undefined when they have none with that id. Read and removal hold the
   * person's factors lock, so an authenticator removed at the same moment cannot leave them with neither.
   */
  deleteUnlessLast(id: string, userId: string, keepOne: boolean): Promise<{ name: string } | 'last' | undefined> {
    return this.db.locked(factorsLockKey(userId), async () => {
      const passkey = await this.passkeys.findOne({ select: { name: true }, where: { id, userId } });
      if (!passkey) return undefined;
      if (keepOne) {
        const totp = await this.transactions.tx.getRepository(TotpFactor).count({ where: { userId, confirmedAt: Not(IsNull()) } });
        if ((await this.countOf(userId)) + totp <= 1) return 'last';
      }
      await this.passkeys.delete({ id, userId });
      return { name: passkey.name };
    });
  }

  /** Every passkey of the person; how many. */
  async deleteAllOf(userId: string): Promise<number> {
    return (await this.passkeys.delete({ userId })).affected ?? 0;
  }

  async insertChallenge(id: string, challenge: string, purpose: ChallengePurpose, userId: string | null, expiresAt: number): Promise<void> {
    await this.challenges.insert({ id, challenge, purpose, userId, expiresAt });
  }

  async takeChallenge(id: string, now: number): Promise<TakenChallenge | undefined> {
    const row = await this.db.one<{ challenge: string; purpose: ChallengePurpose; user_id: string | null }>(TAKE_CHALLENGE, { id, now });
    return row && { challenge: row.challenge, purpose: row.purpose, userId: row.user_id };
  }

  /** Up to `batch` challenges that expired before `cutoff`; how many (one statement, as the retention job's other deletes). */
  async deleteExpiredChallenges(cutoff: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.challenges, 'id', 'expires_at', cutoff, batch);
  }
}
