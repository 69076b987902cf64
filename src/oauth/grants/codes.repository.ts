import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AUDIT_ROW, AuditRepository, auditRowAfter } from '../../audit/audit.repository';
import { SqlRunner, Statement, sql } from '../../database/sql';
import { grantStateColumns } from './grants.repository';
import { type NewRefreshToken, RefreshTokensRepository, refreshTokenAndEventAfter } from './refresh-tokens.repository';

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
/** A code of this client with its grant, and its redemption's state. */
const CODE_ROW = `
  SELECT ${CONSUMED_COLUMNS}, retry_until, ${grantStateColumns('authorization_codes.grant_id')}
  FROM authorization_codes WHERE code_hash = :codeHash AND client_id = :clientId`;
const FIND_CODE = new Statement(CODE_ROW);
/** Consumes a code of this client if nobody has yet: one winner across requests and instances. */
const CONSUME = `
  UPDATE authorization_codes SET consumed_at = CAST(:now AS bigint)
  WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL`;
const CONSUME_CODE = new Statement(CONSUME);
/**
 * PostgreSQL: the redemption's writes in one statement (a data-modifying CTE, one round trip): the code consumed
 * and, only if this request consumed it, the refresh token and the event; SQLite runs them in one unit.
 */
const REDEEM_WITH_REFRESH_TOKEN = new Statement(
  `WITH consumed AS (${CONSUME} RETURNING 1), ${refreshTokenAndEventAfter('consumed')} SELECT COUNT(*) AS won FROM consumed`,
);
const REDEEM_WITH_EVENT = new Statement(
  `WITH consumed AS (${CONSUME} RETURNING 1), ${auditRowAfter('consumed')} SELECT COUNT(*) AS won FROM consumed`,
);
/**
 * A redemption read back by what it wrote (the code consumed at this request's time, and its event, written only
 * with it): when the connection is lost before the answer, the statement may have committed (see
 * SqlRunner.unitOrOutcome). A redemption of the same code by another request in the same millisecond has another
 * event, so it is never taken for this one.
 */
const CODE_SETTLED = new Statement(`SELECT 1 FROM authorization_codes WHERE code_hash = :codeHash FOR UPDATE`);
const REDEEMED = new Statement(`
  SELECT 1 AS redeemed FROM authorization_codes WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at = :now
    AND EXISTS (SELECT 1 FROM audit_events WHERE at = :now AND id = :auditId)`);
/** Marks a redemption (this code's, at `:consumedAt`) whose answer was lost: a presentation again until `:until` is a retry. */
const RETRYABLE = sql`
  UPDATE authorization_codes SET retry_until = :until WHERE code_hash = :codeHash AND consumed_at = :consumedAt AND retry_until IS NULL`;
/** Takes the one retry of a redemption whose answer was lost: whoever sets it to 0 first. */
const TAKE_RETRY = sql`
  UPDATE authorization_codes SET retry_until = 0
  WHERE code_hash = :codeHash AND consumed_at = :consumedAt AND (retry_until IS NULL OR retry_until > :now)`;

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

/** A code of a client with its grant, as {@link CodesRepository.find} reads it. */
export interface StoredCode extends Omit<ConsumedCode, 'consumed_at'> {
  consumed_at: string | number | null;
  /** Until when a presentation again is a retry, after a redemption whose answer was lost. */
  retry_until: string | number | null;
}

/** What a redemption writes: the code consumed at `now`, its event, and the refresh token when one is issued. */
export interface Redemption {
  codeHash: string;
  clientId: string;
  now: number;
  event: AuditEvent;
  refreshToken: NewRefreshToken | undefined;
}

/** A code and its grant's row as {@link CodesRepository.insertWithGrant} takes them (with the event's params). */
export type NewCodeParams = Record<string, unknown>;

/** The authorization codes' one way to their table (and to their grants' rows, which a code starts). */
@Injectable()
export class CodesRepository {
  constructor(
    private readonly db: SqlRunner,
    private readonly refreshTokens: RefreshTokensRepository,
  ) {}

  /** Stores a grant, its code and the `code.issued` event, together. */
  async insertWithGrant(params: NewCodeParams, event: AuditEvent): Promise<void> {
    if (this.db.postgres)
      await this.db.atomic([{ statement: INSERT_GRANT_AND_CODE, params: { ...params, ...AuditRepository.params(event) } }]);
    else await this.db.atomic([{ statement: INSERT_GRANT, params }, { statement: INSERT_CODE, params }, AuditRepository.insertOf(event)]);
  }

  /** The code of this client stored under this hash, consumed or not, with its grant's state. */
  find(codeHash: string, clientId: string): Promise<StoredCode | undefined> {
    return this.db.one<StoredCode>(FIND_CODE, { codeHash, clientId });
  }

  /** Consumes the code if nobody has yet (a refused redemption spends it too); false when someone had. */
  async consume(codeHash: string, clientId: string, now: number): Promise<boolean> {
    return (await this.db.run(CONSUME_CODE, { codeHash, clientId, now })).affected > 0;
  }

  /**
   * Consumes the code, if nobody has yet, and then only stores its refresh token and event, together; false
   * (nothing written) when another request consumed it first. An answer lost with the connection is read back by
   * what it wrote (see SqlRunner.unitOrOutcome).
   */
  redeem({ codeHash, clientId, now, event, refreshToken }: Redemption): Promise<boolean> {
    const redemption = async () => {
      const consume = { statement: CONSUME_CODE, params: { codeHash, clientId, now } };
      const writes = refreshToken
        ? this.refreshTokens.insertWrites(refreshToken, now, event, true)
        : [AuditRepository.insertOf(event, { onlyIfChanged: true })];
      if (!this.db.postgres) return (await this.db.atomic([consume, ...writes]))[0] > 0;
      const statement = refreshToken ? REDEEM_WITH_REFRESH_TOKEN : REDEEM_WITH_EVENT;
      const row = await this.db.one<{ won: string | number }>(statement, { ...writes[0].params, ...consume.params });
      return Number(row?.won) > 0;
    };
    const written = { codeHash, clientId, now, auditId: event.id };
    return this.db.unitOrOutcome(redemption, async () => {
      await this.db.run(CODE_SETTLED, written);
      return (await this.db.one(REDEEMED, written)) ? true : undefined;
    });
  }

  /** Marks the redemption of `codeHash` at `consumedAt` as one whose answer was lost (see RETRYABLE). */
  async markRetryable(codeHash: string, consumedAt: number, until: number): Promise<void> {
    await this.db.run(RETRYABLE, { codeHash, consumedAt, until });
  }

  /** Takes the one retry of the redemption of `codeHash` at `consumedAt` (its mark not past `now`); false when gone. */
  async takeRetry(codeHash: string, consumedAt: number, now: number): Promise<boolean> {
    return (await this.db.run(TAKE_RETRY, { codeHash, consumedAt, now })).affected > 0;
  }
}
