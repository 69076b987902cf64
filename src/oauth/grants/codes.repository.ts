import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AUDIT_ROW, AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, Statement, type StatementWrite, sql } from '../../database/sql';
import { grantStateColumns } from './grants.repository';

const GRANT_INSERT = `
  INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid, amr)
  VALUES (:grantId, :userId, :clientId, :scope, :resources, :now, :grantExpiresAt, NULL, :authTime, :sid, :amr)`;
const CODE_INSERT = `
  INSERT INTO authorization_codes
    (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at, nonce, dpop_jkt)
  VALUES (:codeHash, :grantId, :clientId, :userId, :redirectUri, :scope, :codeChallenge, :now, :codeExpiresAt, NULL, :nonce, :dpopJkt)`;
/** PostgreSQL: the grant, its code and the `code.issued` event in one statement (one round trip). */
const INSERT_GRANT_AND_CODE = new Statement(
  `WITH grant_row AS (${GRANT_INSERT}), audit AS (${AUDIT_ROW.insert} VALUES (${AUDIT_ROW.values})) ${CODE_INSERT}`,
);
/** SQLite: the grant and the code, two writes of one transaction with the event. */
const INSERT_GRANT = new Statement(GRANT_INSERT);
const INSERT_CODE = new Statement(CODE_INSERT);
/**
 * PostgreSQL, a client that needs no consent: the login session read, and the grant and its code written when the
 * session is live, in one statement (one round trip for the whole authorization request).
 */
const ISSUE_CODE_IN_SESSION = new Statement(
  `
  WITH session AS (
    SELECT user_id, expires_at, COALESCE(auth_time, created_at) AS auth_time, sid, amr FROM sessions WHERE id = :sessionId),
  live AS (
    SELECT user_id, auth_time, sid, amr FROM session WHERE expires_at > :now AND auth_time >= CAST(:minAuthTime AS bigint)),
  grant_row AS (
    INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid, amr)
    SELECT :grantId, user_id, :clientId, :scope, CAST(:resources AS text), CAST(:now AS bigint), CAST(:grantExpiresAt AS bigint), NULL,
      auth_time, sid, amr
    FROM live
    RETURNING user_id),
  code_row AS (
    INSERT INTO authorization_codes
      (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at, nonce, dpop_jkt)
    SELECT :codeHash, :grantId, :clientId, user_id, :redirectUri, :scope, :codeChallenge, CAST(:now AS bigint), CAST(:codeExpiresAt AS bigint), NULL,
      CAST(:nonce AS text), CAST(:dpopJkt AS varchar)
    FROM grant_row
    RETURNING user_id),
  audit AS (
    ${AUDIT_ROW.insert}
    SELECT :auditId, CAST(:now AS bigint), :auditType, 'user:' || user_id, user_id, :clientId, :auditAddress, :auditRequestId, :auditDetails
    FROM code_row)
  SELECT user_id FROM code_row`,
);

const CONSUMED_COLUMNS = 'grant_id, user_id, redirect_uri, scope, code_challenge, expires_at, nonce, dpop_jkt';
/**
 * Consumes a code of this client, if nobody has yet, and reads its grant in the same statement: the winner of a
 * concurrent redemption sees the grant as it was before any replay could revoke it.
 */
const CONSUME_CODE = new Statement(`
  UPDATE authorization_codes SET consumed_at = :now
  WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL
  RETURNING ${CONSUMED_COLUMNS},
    ${grantStateColumns('authorization_codes.grant_id')}`);
/**
 * PostgreSQL: the same, and in the same statement (one round trip) the new refresh token — stored only if the
 * redemption succeeds, under the conditions {@link CodeGrantService.exchange} checks again on the returned row:
 * live grant, live code, the PKCE challenge of the presented verifier (NULL for none), the redirect URI and the
 * requested resources (RFC 8707: among the grant's, or the API's when it named none; `:requested` space-separated).
 */
const CONSUME_CODE_AND_ISSUE = new Statement(`
  WITH consumed AS (
    UPDATE authorization_codes SET consumed_at = :now
    WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL
    RETURNING ${CONSUMED_COLUMNS}),
  code AS (
    SELECT consumed.*, g.revoked_at AS grant_revoked_at, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
      g.auth_time AS grant_auth_time, g.sid AS grant_sid, g.amr AS grant_amr
    FROM consumed LEFT JOIN grants g ON g.id = consumed.grant_id),
  passed AS (
    SELECT * FROM code
    WHERE grant_revoked_at IS NULL AND grant_expires_at > :now AND expires_at > :now
      AND code_challenge IS NOT DISTINCT FROM :challenge
      AND (dpop_jkt IS NULL OR dpop_jkt = CAST(:jkt AS varchar))
      AND (redirect_uri = :redirectUri OR (redirect_uri IS NULL AND :registeredRedirect))
      AND (:requested = '' OR NOT EXISTS (
        SELECT 1 FROM unnest(string_to_array(:requested, ' ')) AS requested(uri)
        WHERE requested.uri <> ALL (string_to_array(COALESCE(NULLIF(grant_resources, ''), :api), ' '))))),
  issued AS (
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at, dpop_jkt)
    SELECT :refreshHash, grant_id, :clientId, user_id, scope, CAST(:now AS bigint), grant_expires_at, NULL, CAST(:refreshJkt AS varchar)
    FROM passed
    WHERE :withRefresh
    RETURNING 1),
  audit AS (
    ${AUDIT_ROW.insert}
    SELECT :auditId, CAST(:now AS bigint), :auditType, :auditActor, user_id, :clientId, :auditAddress, :auditRequestId, :auditDetails
    FROM passed
    RETURNING 1)
  SELECT code.*, EXISTS (SELECT 1 FROM issued) AS issued, EXISTS (SELECT 1 FROM audit) AS audited FROM code`);
/**
 * What {@link CONSUME_CODE_AND_ISSUE} returned, read back by what it wrote (the code consumed at this request's
 * time, and its event, which only a redemption that passed its checks writes): when the connection is lost before
 * its answer, the redemption may have committed (see SqlRunner.oneOrOutcome). A redemption of the same code by
 * another request in the same millisecond has another event, so it is never taken for this one.
 */
const CODE_SETTLED = new Statement(`SELECT 1 FROM authorization_codes WHERE code_hash = :codeHash FOR UPDATE`);
const CONSUMED_OUTCOME = new Statement(`
  SELECT c.grant_id, c.user_id, c.redirect_uri, c.scope, c.code_challenge, c.expires_at, c.nonce, c.dpop_jkt,
    g.revoked_at AS grant_revoked_at, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
    g.auth_time AS grant_auth_time, g.sid AS grant_sid, g.amr AS grant_amr,
    EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = :refreshHash) AS issued,
    EXISTS (SELECT 1 FROM audit_events WHERE at = :now AND id = :auditId) AS audited
  FROM authorization_codes c LEFT JOIN grants g ON g.id = c.grant_id
  WHERE c.code_hash = :codeHash AND c.client_id = :clientId AND c.consumed_at = :now
    AND EXISTS (SELECT 1 FROM audit_events WHERE at = :now AND id = :auditId)`);
const FIND_CODE = sql`SELECT grant_id, client_id, user_id FROM authorization_codes WHERE code_hash = :codeHash`;

export interface ConsumedCode {
  grant_id: string;
  user_id: string;
  redirect_uri: string | null;
  scope: string;
  code_challenge: string | null;
  expires_at: string | number;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
  grant_resources: string | null;
  nonce: string | null;
  /** RFC 9449 10: the key the code is bound to, or null. */
  dpop_jkt: string | null;
  grant_auth_time: string | number | null;
  grant_sid: string | null;
  grant_amr: string | null;
  /** Whether the redemption stored the new refresh token (PostgreSQL: its statement; SQLite: its unit). */
  issued?: boolean;
  /** Whether the redemption stored the `code.redeemed` event (exactly when the code's checks pass). */
  audited?: boolean;
}

/** A code and its grant's row as {@link CodesRepository.insertWithGrant} takes them (with the event's params). */
export type NewCodeParams = Record<string, unknown>;

/**
 * The authorization codes' one way to their table (and to their grants' rows, which a code starts). On PostgreSQL
 * a code's issue and its redemption are one statement each, checks and event included ({@link inOneStatement}).
 */
@Injectable()
export class CodesRepository {
  constructor(private readonly db: SqlRunner) {}

  /** PostgreSQL: the session check, the redemption's checks and the writes go in one statement each. */
  get inOneStatement(): boolean {
    return this.db.postgres;
  }

  /** Stores a grant, its code and the `code.issued` event, together. */
  async insertWithGrant(params: NewCodeParams, event: AuditEvent): Promise<void> {
    if (this.db.postgres) await this.db.run(INSERT_GRANT_AND_CODE, params);
    else await this.db.atomic([{ statement: INSERT_GRANT, params }, { statement: INSERT_CODE, params }, AuditRepository.insertOf(event)]);
  }

  /**
   * PostgreSQL: stores the grant, its code and the event for the user of the live session `:sessionId` logged in
   * at `:minAuthTime` or later; that user, or undefined when there is no such session (nothing written).
   */
  async insertInSession(params: NewCodeParams): Promise<string | undefined> {
    return (await this.db.one<{ user_id: string }>(ISSUE_CODE_IN_SESSION, params))?.user_id;
  }

  /**
   * PostgreSQL: consumes the code and, when its checks pass, stores the refresh token and the event (see
   * {@link CONSUME_CODE_AND_ISSUE}); the consumed code with its grant, or undefined when no unconsumed code of the
   * client has this hash. An answer lost with the connection is read back by what it wrote.
   */
  consumeAndIssue(params: Record<string, unknown>): Promise<ConsumedCode | undefined> {
    return this.db.oneOrOutcome<ConsumedCode>(CONSUME_CODE_AND_ISSUE, params, { settle: CODE_SETTLED, outcome: CONSUMED_OUTCOME });
  }

  /**
   * SQLite: in one transaction, consumes the code and runs the writes `decide` returns for it (none: the code stays
   * consumed); `decide`'s result, or undefined when no unconsumed code of the client has this hash.
   */
  consumeInUnit<T>(
    consume: { now: number; codeHash: string; clientId: string },
    decide: (consumed: ConsumedCode) => { writes: StatementWrite[]; result: T },
  ): Promise<T | undefined> {
    return this.db.sqliteUnit((exec) => {
      const consumed = exec<ConsumedCode>(CONSUME_CODE, consume).rows[0];
      if (!consumed) return undefined;
      const { writes, result } = decide(consumed);
      for (const { statement, params } of writes) exec(statement, params);
      return result;
    });
  }

  /** Whose code this hash is, consumed or not. */
  find(codeHash: string): Promise<{ grant_id: string; client_id: string; user_id: string } | undefined> {
    return this.db.one<{ grant_id: string; client_id: string; user_id: string }>(FIND_CODE, { codeHash });
  }
}
