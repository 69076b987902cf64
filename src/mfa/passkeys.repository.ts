import { Injectable } from '@nestjs/common';
import { lockedReadWrite } from '../database/locked-write';
import { SqlRunner, Statement, epochMs, expiredRowsDeletion, sql } from '../database/sql';
import { factorsLockKey } from './factors-lock';

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

const COLUMNS = 'id, user_id, name, public_key, sign_count, transports, aaguid, device_type, backed_up, created_at, last_used_at';
const FIND = new Statement(`SELECT ${COLUMNS} FROM passkeys WHERE id = :id`);
const OF_USER = new Statement(`SELECT ${COLUMNS} FROM passkeys WHERE user_id = :userId ORDER BY created_at, id`);
const COUNT_OF_USER = sql`SELECT COUNT(*) AS n FROM passkeys WHERE user_id = :userId`;
const INSERT = sql`
  INSERT INTO passkeys (id, user_id, name, public_key, sign_count, transports, aaguid, device_type, backed_up, created_at, last_used_at)
  VALUES (:id, :userId, :name, :publicKey, :signCount, :transports, :aaguid, :deviceType, :backedUp, :now, NULL)
  ON CONFLICT (id) DO NOTHING`;
/**
 * A sign-in with the passkey: its new counter (never lower than the stored one, so that of two racing sign-ins the
 * later counter stays), its backup state, when.
 */
const USED = sql`
  UPDATE passkeys SET sign_count = CASE WHEN sign_count < :signCount THEN :signCount ELSE sign_count END,
    backed_up = :backedUp, last_used_at = :now
  WHERE id = :id AND user_id = :userId`;
const RENAME = sql`UPDATE passkeys SET name = :name WHERE id = :id AND user_id = :userId`;
const DELETE = sql`DELETE FROM passkeys WHERE id = :id AND user_id = :userId`;
const DELETE_OF_USER = sql`DELETE FROM passkeys WHERE user_id = :userId`;
/** The passkey's name (none when it is not the person's), and the factors the person has: what a removal leaves. */
const REMOVAL_OF = sql`
  SELECT
    (SELECT name FROM passkeys WHERE id = :id AND user_id = :userId) AS name,
    (SELECT COUNT(*) FROM passkeys WHERE user_id = :userId) AS passkeys,
    (SELECT COUNT(*) FROM totp_factors WHERE user_id = :userId AND confirmed_at IS NOT NULL) AS totp`;
const INSERT_CHALLENGE = sql`
  INSERT INTO webauthn_challenges (id, challenge, purpose, user_id, expires_at) VALUES (:id, :challenge, :purpose, :userId, :expiresAt)`;
/** Takes the challenge: the one statement that reads it also deletes it, so an answer is checked against it once. */
const TAKE_CHALLENGE = sql`
  DELETE FROM webauthn_challenges WHERE id = :id AND expires_at > :now RETURNING challenge, purpose, user_id`;
/** Planned at each run with its cutoff (as the retention job's other deletes; see RetentionRepository). */
const DELETE_EXPIRED_CHALLENGES = expiredRowsDeletion('webauthn_challenges');

interface Row {
  id: string;
  user_id: string;
  name: string;
  public_key: string;
  sign_count: unknown;
  transports: string;
  aaguid: string;
  device_type: string;
  backed_up: unknown;
  created_at: unknown;
  last_used_at: unknown;
}

function passkeyOf(row: Row): PasskeyRow {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    publicKey: row.public_key,
    signCount: Number(row.sign_count),
    transports: row.transports ? row.transports.split(',') : [],
    aaguid: row.aaguid,
    deviceType: row.device_type === 'multiDevice' ? 'multiDevice' : 'singleDevice',
    backedUp: Boolean(row.backed_up),
    createdAt: epochMs(row.created_at),
    lastUsedAt: epochMs(row.last_used_at, true),
  };
}

/** The passkeys' one way to their tables. */
@Injectable()
export class PasskeysRepository {
  constructor(private readonly db: SqlRunner) {}

  async find(id: string): Promise<PasskeyRow | undefined> {
    const row = await this.db.one<Row>(FIND, { id });
    return row && passkeyOf(row);
  }

  async ofUser(userId: string): Promise<PasskeyRow[]> {
    return (await this.db.run<Row>(OF_USER, { userId })).rows.map(passkeyOf);
  }

  async countOf(userId: string): Promise<number> {
    return Number((await this.db.one<{ n: unknown }>(COUNT_OF_USER, { userId }))?.n ?? 0);
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
    return (await this.db.run(RENAME, { id, userId, name })).affected > 0;
  }

  /**
   * Deletes one of the person's passkeys, unless `keepOne` and it is their last factor (no other passkey, no
   * authenticator): its name, `last`, or undefined when they have none with that id. Read and removal hold the
   * person's factors lock, so an authenticator removed at the same moment cannot leave them with neither.
   */
  deleteUnlessLast(id: string, userId: string, keepOne: boolean): Promise<{ name: string } | 'last' | undefined> {
    type Left = { name: string | null; passkeys: unknown; totp: unknown };
    return lockedReadWrite<Left, { name: string } | 'last' | undefined>(
      this.db,
      factorsLockKey(userId),
      { statement: REMOVAL_OF, params: { id, userId } },
      ([left]) => {
        if (left.name === null) return { writes: [], result: undefined };
        if (keepOne && Number(left.passkeys) + Number(left.totp) <= 1) return { writes: [], result: 'last' };
        return { writes: [{ statement: DELETE, params: { id, userId } }], result: { name: left.name } };
      },
    );
  }

  /** Every passkey of the person; how many. */
  async deleteAllOf(userId: string): Promise<number> {
    return (await this.db.run(DELETE_OF_USER, { userId })).affected;
  }

  async insertChallenge(id: string, challenge: string, purpose: ChallengePurpose, userId: string | null, expiresAt: number): Promise<void> {
    await this.db.run(INSERT_CHALLENGE, { id, challenge, purpose, userId, expiresAt });
  }

  async takeChallenge(id: string, now: number): Promise<TakenChallenge | undefined> {
    const row = await this.db.one<{ challenge: string; purpose: ChallengePurpose; user_id: string | null }>(TAKE_CHALLENGE, { id, now });
    return row && { challenge: row.challenge, purpose: row.purpose, userId: row.user_id };
  }

  /** Up to `batch` challenges that expired before `cutoff`; how many. */
  async deleteExpiredChallenges(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED_CHALLENGES, { cutoff, batch })).affected;
  }
}
