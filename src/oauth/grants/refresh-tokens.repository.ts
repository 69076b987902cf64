import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AUDIT_ROW, AuditRepository, auditRowAfter } from '../../audit/audit.repository';
import { SqlRunner, Statement, type StatementWrite, sql } from '../../database/sql';
import { RefreshToken } from '../entities/refresh-token.entity';
import { grantStateColumns } from './grants.repository';

const REFRESH_TOKEN_INSERT = `
  INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at, dpop_jkt)
  VALUES (:tokenHash, :grantId, :clientId, :userId, :scope, :now, :expiresAt, NULL, :dpopJkt)`;
const INSERT_REFRESH_TOKEN = new Statement(REFRESH_TOKEN_INSERT);
/**
 * PostgreSQL: a refresh token and its event written by one statement (a data-modifying CTE), and a rotation with
 * its successor and event by one, where SQLite (no such CTE; statements are function calls) runs two and three in
 * one unit. Only the writing is combined: every check is the service's, the same on both databases.
 */
const INSERT_REFRESH_TOKEN_WITH_EVENT = new Statement(
  `WITH audit AS (${AUDIT_ROW.insert} VALUES (${AUDIT_ROW.values})) ${REFRESH_TOKEN_INSERT}`,
);
/**
 * PostgreSQL: the CTE parts that store a refresh token (the named parameters of {@link RefreshTokensRepository.insertWrites})
 * and its event once for each row the CTE `after` returns: a conditional write's successor (none when it lost).
 */
export function refreshTokenAndEventAfter(after: string): string {
  return `issued AS (
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at, dpop_jkt)
    SELECT :tokenHash, :grantId, :clientId, :userId, :scope, CAST(:now AS bigint), CAST(:expiresAt AS bigint), NULL,
      CAST(:dpopJkt AS varchar)
    FROM ${after}),
  ${auditRowAfter(after)}`;
}
const ROTATE_WITH_SUCCESSOR = new Statement(`
  WITH rotated AS (
    UPDATE refresh_tokens SET rotated_at = CAST(:now AS bigint), successor_sealed = :sealed
    WHERE token_hash = :presentedHash AND rotated_at IS NULL
    RETURNING 1),
  ${refreshTokenAndEventAfter('rotated')}
  SELECT COUNT(*) AS won FROM rotated`);

/** The refresh token with its grant's state, in one round trip. */
const FIND_REFRESH_TOKEN = new Statement(`
  SELECT r.grant_id, r.client_id, r.user_id, r.scope, r.expires_at, r.rotated_at, r.successor_sealed, r.retry_until, r.dpop_jkt,
    ${grantStateColumns('r.grant_id')}
  FROM refresh_tokens r
  WHERE r.token_hash = :tokenHash`);
const ROTATE_REFRESH_TOKEN = sql`
  UPDATE refresh_tokens SET rotated_at = :now, successor_sealed = :sealed WHERE token_hash = :tokenHash AND rotated_at IS NULL`;
/**
 * The rotation grace is used once: whoever clears the sealed successor first gets it — and only while the
 * successor itself is still unused (checked in the same statement, so a rotation of the successor in between
 * cannot slip through).
 */
/** Marks a rotation (this token's, at `:rotatedAt`) whose answer was lost: a presentation again until `:until` is a retry. */
const RETRYABLE = sql`UPDATE refresh_tokens SET retry_until = :until WHERE token_hash = :tokenHash AND rotated_at = :rotatedAt`;
const USE_GRACE = sql`
  UPDATE refresh_tokens SET successor_sealed = NULL
  WHERE token_hash = :tokenHash AND successor_sealed IS NOT NULL
    AND EXISTS (SELECT 1 FROM refresh_tokens s WHERE s.token_hash = :successorHash AND s.rotated_at IS NULL)`;
/**
 * A rotation read back by the successor it stored: when the connection is lost before the answer, the rotation may
 * have committed (see SqlRunner.unitOrOutcome).
 */
const PRESENTED_SETTLED = new Statement(`SELECT 1 FROM refresh_tokens WHERE token_hash = :tokenHash FOR UPDATE`);
const SUCCESSOR_STORED = new Statement(`SELECT 1 AS stored FROM refresh_tokens WHERE token_hash = :nextHash AND client_id = :clientId`);

export interface RefreshTokenRow {
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  expires_at: string | number;
  rotated_at: string | number | null;
  successor_sealed: string | null;
  /** Until when a presentation again gets the successor, after a rotation whose answer was lost. */
  retry_until: string | number | null;
  /** RFC 9449: the thumbprint of the key a public client's refresh token is bound to. */
  dpop_jkt: string | null;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
  grant_resources: string | null;
  grant_auth_time: string | number | null;
  grant_sid: string | null;
  grant_amr: string | null;
}

/** A refresh token to store: its hash, grant, client, person, scope, and the family's (absolute) expiry. */
export interface NewRefreshToken {
  tokenHash: string;
  grantId: string;
  clientId: string;
  userId: string;
  scope: string;
  expiresAt: number;
  /** The key it is bound to (a public client's, RFC 9449), or null. */
  dpopJkt: string | null;
}

/** The refresh tokens' one way to their table. */
@Injectable()
export class RefreshTokensRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The table, in the current unit of work when there is one. */
  private get stored(): Repository<RefreshToken> {
    return this.transactions.tx.getRepository(RefreshToken);
  }

  /** The stored refresh token of this hash, rotated or not, as an entity (revocation, introspection). */
  findStored(tokenHash: string): Promise<RefreshToken | null> {
    return this.stored.findOne({ where: { tokenHash } });
  }

  /** The refresh token stored under this hash, with its grant's state. */
  find(tokenHash: string): Promise<RefreshTokenRow | undefined> {
    return this.db.one<RefreshTokenRow>(FIND_REFRESH_TOKEN, { tokenHash });
  }

  /**
   * The writes that store a refresh token together with the event that issued it. With `onlyIfChanged`, they run
   * only when the write before them changed a row.
   */
  insertWrites(token: NewRefreshToken, now: number, event: AuditEvent, onlyIfChanged = false): StatementWrite[] {
    const params = {
      tokenHash: token.tokenHash,
      grantId: token.grantId,
      clientId: token.clientId,
      userId: token.userId,
      scope: token.scope,
      expiresAt: token.expiresAt,
      dpopJkt: token.dpopJkt,
      now,
    };
    if (this.db.postgres)
      return [{ statement: INSERT_REFRESH_TOKEN_WITH_EVENT, params: { ...params, ...AuditRepository.params(event) }, onlyIfChanged }];
    return [{ statement: INSERT_REFRESH_TOKEN, params, onlyIfChanged }, AuditRepository.insertOf(event, { onlyIfChanged })];
  }

  /** Stores a refresh token with its event. */
  async insert(token: NewRefreshToken, now: number, event: AuditEvent): Promise<void> {
    await this.db.atomic(this.insertWrites(token, now, event));
  }

  /**
   * Rotates the unrotated token `tokenHash` (keeping `sealed`, its successor sealed for the grace) and stores the
   * successor with its event, together; false (nothing written) when another request rotated it first. An answer
   * lost with the connection is read back by the successor's hash.
   */
  rotate(tokenHash: string, sealed: string | null, now: number, successor: NewRefreshToken, event: AuditEvent): Promise<boolean> {
    const rotation = async () => {
      if (this.db.postgres) {
        const [{ params }] = this.insertWrites(successor, now, event);
        const row = await this.db.one<{ won: string | number }>(ROTATE_WITH_SUCCESSOR, { ...params, presentedHash: tokenHash, sealed });
        return Number(row?.won) > 0;
      }
      const [won] = await this.db.atomic([
        { statement: ROTATE_REFRESH_TOKEN, params: { now, tokenHash, sealed } },
        ...this.insertWrites(successor, now, event, true),
      ]);
      return won > 0;
    };
    const written = { tokenHash, nextHash: successor.tokenHash, clientId: successor.clientId };
    return this.db.unitOrOutcome(rotation, async () => {
      await this.db.run(PRESENTED_SETTLED, written);
      return (await this.db.one(SUCCESSOR_STORED, written)) ? true : undefined;
    });
  }

  /** Marks the rotation of `tokenHash` at `rotatedAt` as one whose answer was lost (see RETRYABLE). */
  async markRetryable(tokenHash: string, rotatedAt: number, until: number): Promise<void> {
    await this.db.run(RETRYABLE, { tokenHash, rotatedAt, until });
  }

  /** Takes the rotation grace of `tokenHash` (its successor `successorHash` still unused), with the event; false when gone. */
  async useGrace(tokenHash: string, successorHash: string, event: AuditEvent): Promise<boolean> {
    const [used] = await this.db.atomic([
      { statement: USE_GRACE, params: { tokenHash, successorHash } },
      AuditRepository.insertOf(event, { onlyIfChanged: true }),
    ]);
    return used > 0;
  }
}
