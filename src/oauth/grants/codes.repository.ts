import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AUDIT_ROW, AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, Statement, sql } from '../../database/sql';
import { grantStateColumns } from './grants.repository';

const GRANT_INSERT = `
  INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid, amr)
  VALUES (:grantId, :userId, :clientId, :scope, :resources, :now, :grantExpiresAt, NULL, :authTime, :sid, :amr)`;
const CODE_INSERT = `
  INSERT INTO authorization_codes
    (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at, nonce, dpop_jkt)
  VALUES (:codeHash, :grantId, :clientId, :userId, :redirectUri, :scope, :codeChallenge, :now, :codeExpiresAt, NULL, :nonce, :dpopJkt)`;
const INSERT_GRANT = new Statement(GRANT_INSERT);
const INSERT_CODE = new Statement(CODE_INSERT);
/**
 * PostgreSQL: the same three rows (grant, code, `code.issued` event) written by one statement, a round trip instead
 * of five (a unit's BEGIN, three INSERTs, COMMIT). SQLite has no data-modifying CTE, and its statements are
 * function calls: the three INSERTs in one unit.
 */
const INSERT_GRANT_AND_CODE = new Statement(
  `WITH grant_row AS (${GRANT_INSERT}), audit AS (${AUDIT_ROW.insert} VALUES (${AUDIT_ROW.values})) ${CODE_INSERT}`,
);

const CONSUMED_COLUMNS = 'grant_id, user_id, redirect_uri, scope, code_challenge, expires_at, consumed_at, nonce, dpop_jkt';
/**
 * Consumes a code of this client, if nobody has yet, and reads its grant in the same statement: the winner of a
 * concurrent redemption sees the grant as it was before any replay could revoke it.
 */
const CONSUME_CODE = new Statement(`
  UPDATE authorization_codes SET consumed_at = :now
  WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL
  RETURNING ${CONSUMED_COLUMNS},
    ${grantStateColumns('authorization_codes.grant_id')}`);
/** A code of this client with its grant, as {@link CONSUME_CODE} returns it. */
const CONSUMED_ROW = `
  SELECT ${CONSUMED_COLUMNS}, ${grantStateColumns('authorization_codes.grant_id')}
  FROM authorization_codes WHERE code_hash = :codeHash AND client_id = :clientId`;
/**
 * A redemption read back by what it wrote (the code consumed at this request's time, and its event, which only a
 * redemption that passed its checks writes): when the connection is lost before the answer, the redemption may have
 * committed (see SqlRunner.unitOrOutcome). A redemption of the same code by another request in the same millisecond
 * has another event, so it is never taken for this one.
 */
const CODE_SETTLED = new Statement(`SELECT 1 FROM authorization_codes WHERE code_hash = :codeHash FOR UPDATE`);
const CONSUMED_OUTCOME = new Statement(`${CONSUMED_ROW}
    AND consumed_at = :now AND EXISTS (SELECT 1 FROM audit_events WHERE at = :now AND id = :auditId)`);
const FIND_CODE = sql`
  SELECT grant_id, client_id, user_id, consumed_at, retry_until FROM authorization_codes WHERE code_hash = :codeHash`;
/** Marks a redemption (this code's, at `:consumedAt`) whose answer was lost: a presentation again until `:until` is a retry. */
const RETRYABLE = sql`
  UPDATE authorization_codes SET retry_until = :until WHERE code_hash = :codeHash AND consumed_at = :consumedAt AND retry_until IS NULL`;
/** Takes the one retry of a redemption whose answer was lost: whoever sets it to 0 first. */
const TAKE_RETRY = sql`
  UPDATE authorization_codes SET retry_until = 0
  WHERE code_hash = :codeHash AND consumed_at = :consumedAt AND (retry_until IS NULL OR retry_until > :now)`;
/** A consumed code with its grant, as {@link CONSUME_CODE} returned it. */
const CONSUMED = new Statement(CONSUMED_ROW);

export interface ConsumedCode {
  grant_id: string;
  user_id: string;
  redirect_uri: string | null;
  scope: string;
  code_challenge: string | null;
  expires_at: string | number;
  /** When it was redeemed (the request's time; an earlier one for the retry of a lost answer). */
  consumed_at: string | number;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
  grant_resources: string | null;
  nonce: string | null;
  /** RFC 9449 10: the key the code is bound to, or null. */
  dpop_jkt: string | null;
  grant_auth_time: string | number | null;
  grant_sid: string | null;
  grant_amr: string | null;
}

/** Whose code a hash is, and its redemption's state. */
export interface KnownCode {
  grant_id: string;
  client_id: string;
  user_id: string;
  consumed_at: string | number | null;
  retry_until: string | number | null;
}

/** A code and its grant's row as {@link CodesRepository.insertWithGrant} takes them (with the event's params). */
export type NewCodeParams = Record<string, unknown>;

/** The authorization codes' one way to their table (and to their grants' rows, which a code starts). */
@Injectable()
export class CodesRepository {
  constructor(private readonly db: SqlRunner) {}

  /** Stores a grant, its code and the `code.issued` event, together. */
  async insertWithGrant(params: NewCodeParams, event: AuditEvent): Promise<void> {
    if (this.db.postgres)
      await this.db.atomic([{ statement: INSERT_GRANT_AND_CODE, params: { ...params, ...AuditRepository.params(event) } }]);
    else await this.db.atomic([{ statement: INSERT_GRANT, params }, { statement: INSERT_CODE, params }, AuditRepository.insertOf(event)]);
  }

  /**
   * Consumes an unconsumed code of this client, once across requests and instances (a conditional UPDATE: one
   * winner), with its grant's state as it was before any replay could revoke it; undefined when there is none.
   */
  consume(params: { now: number; codeHash: string; clientId: string }): Promise<ConsumedCode | undefined> {
    return this.db.one<ConsumedCode>(CONSUME_CODE, params);
  }

  /**
   * The redemption `redeem` (a unit of work that consumes the code `codeHash` at `now` and, when its checks pass,
   * stores the event `auditId`), or, when the connection was lost before its answer, the code it consumed read back
   * by what it wrote (see SqlRunner.unitOrOutcome).
   */
  redeemOnce<T>(
    redeem: () => Promise<T>,
    written: { now: number; codeHash: string; clientId: string; auditId: string },
  ): Promise<T | ConsumedCode> {
    return this.db.unitOrOutcome<T | ConsumedCode>(redeem, async () => {
      await this.db.run(CODE_SETTLED, written);
      return this.db.one<ConsumedCode>(CONSUMED_OUTCOME, written);
    });
  }

  /** Whose code this hash is, consumed (when) or not, and whether a lost answer's retry is open. */
  find(codeHash: string): Promise<KnownCode | undefined> {
    return this.db.one<KnownCode>(FIND_CODE, { codeHash });
  }

  /** Marks the redemption of `codeHash` at `consumedAt` as one whose answer was lost (see RETRYABLE). */
  async markRetryable(codeHash: string, consumedAt: number, until: number): Promise<void> {
    await this.db.run(RETRYABLE, { codeHash, consumedAt, until });
  }

  /**
   * Takes the one retry of the redemption of `codeHash` at `consumedAt` (its mark not past `now`): the consumed code
   * with its grant, or undefined when the retry is gone.
   */
  async takeRetry(codeHash: string, clientId: string, consumedAt: number, now: number): Promise<ConsumedCode | undefined> {
    if ((await this.db.run(TAKE_RETRY, { codeHash, consumedAt, now })).affected === 0) return undefined;
    return this.db.one<ConsumedCode>(CONSUMED, { codeHash, clientId });
  }
}
