import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AUDIT_ROW, AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, Statement, type StatementWrite, sql } from '../../database/sql';
import { RefreshToken } from '../entities/refresh-token.entity';
import { grantStateColumns } from './grants.repository';

const REFRESH_TOKEN_INSERT = `
  INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at, dpop_jkt)
  VALUES (:tokenHash, :grantId, :clientId, :userId, :scope, :now, :expiresAt, NULL, :dpopJkt)`;
/** A refresh token and the event that issued it, in one statement: PostgreSQL, a data-modifying CTE. */
const INSERT_REFRESH_TOKEN_POSTGRES = new Statement(
  `WITH audit AS (${AUDIT_ROW.insert} VALUES (${AUDIT_ROW.values})) ${REFRESH_TOKEN_INSERT}`,
);
/** SQLite: the refresh token alone (the event is a second write of the same transaction). */
const INSERT_REFRESH_TOKEN = new Statement(REFRESH_TOKEN_INSERT);

/** The refresh token with its grant's state, in one round trip. */
const FIND_REFRESH_TOKEN = new Statement(`
  SELECT r.grant_id, r.client_id, r.user_id, r.scope, r.expires_at, r.rotated_at, r.successor_sealed, r.dpop_jkt,
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
const USE_GRACE = sql`
  UPDATE refresh_tokens SET successor_sealed = NULL
  WHERE token_hash = :tokenHash AND successor_sealed IS NOT NULL
    AND EXISTS (SELECT 1 FROM refresh_tokens s WHERE s.token_hash = :successorHash AND s.rotated_at IS NULL)`;
/**
 * PostgreSQL, a refresh that keeps the grant's scope: rotation and the new refresh token in one statement (one
 * round trip), done only when the token is this client's, unrotated, live, bound to no key or to the key of the
 * request's DPoP proof (`:jkt`, the successor inherits the binding), and its grant is live. When it
 * returns no row, the refresh goes the long way, which finds out why (and revokes the grant on reuse).
 *
 * The grant is looked at by its key from the token's row (a subquery per row), not joined in the UPDATE: with the
 * join, PostgreSQL's cached plan of a fresh database, made while `grants` was a page or two and never analyzed,
 * read every grant on every refresh until autovacuum's first ANALYZE (a minute or more).
 */
const ROTATE_AND_ISSUE = new Statement(`
  WITH rotated AS (
    UPDATE refresh_tokens r SET rotated_at = :now, successor_sealed = :sealed
    WHERE r.token_hash = :tokenHash AND r.client_id = :clientId AND r.rotated_at IS NULL AND r.expires_at > :now
      AND (r.dpop_jkt IS NULL OR r.dpop_jkt = CAST(:jkt AS varchar))
      AND (SELECT g.revoked_at IS NULL AND g.expires_at > :now FROM grants g WHERE g.id = r.grant_id)
    RETURNING r.grant_id, r.user_id, r.scope, r.dpop_jkt),
  live AS (
    SELECT rotated.*, g.expires_at AS grant_expires_at, g.resources AS grant_resources, g.auth_time AS grant_auth_time,
      g.sid AS grant_sid, g.amr AS grant_amr
    FROM rotated JOIN grants g ON g.id = rotated.grant_id),
  issued AS (
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at, dpop_jkt)
    SELECT :nextHash, grant_id, :clientId, user_id, scope, CAST(:now AS bigint), grant_expires_at, NULL, dpop_jkt FROM live
    RETURNING user_id),
  audit AS (
    ${AUDIT_ROW.insert}
    SELECT :auditId, CAST(:now AS bigint), :auditType, :auditActor, user_id, :clientId, :auditAddress, :auditRequestId, :auditDetails
    FROM issued)
  SELECT live.* FROM live WHERE EXISTS (SELECT 1 FROM issued)`);

/**
 * What {@link ROTATE_AND_ISSUE} returned, read back by the successor it stored: when the connection is lost before
 * its answer, the rotation may have committed (see SqlRunner.oneOrOutcome).
 */
const PRESENTED_SETTLED = new Statement(`SELECT 1 FROM refresh_tokens WHERE token_hash = :tokenHash FOR UPDATE`);
const ROTATED_OUTCOME = new Statement(`
  SELECT r.grant_id, r.user_id, r.scope, r.dpop_jkt, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
    g.auth_time AS grant_auth_time, g.sid AS grant_sid, g.amr AS grant_amr
  FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
  WHERE r.token_hash = :nextHash AND r.client_id = :clientId`);

export interface RefreshTokenRow {
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  expires_at: string | number;
  rotated_at: string | number | null;
  successor_sealed: string | null;
  /** RFC 9449: the thumbprint of the key a public client's refresh token is bound to. */
  dpop_jkt: string | null;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
  grant_resources: string | null;
  grant_auth_time: string | number | null;
  grant_sid: string | null;
  grant_amr: string | null;
}

export type RotatedRow = Pick<
  RefreshTokenRow,
  'grant_id' | 'user_id' | 'scope' | 'grant_resources' | 'grant_auth_time' | 'grant_sid' | 'grant_amr' | 'dpop_jkt'
> & {
  grant_expires_at: string | number;
};

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
    @InjectRepository(RefreshToken) private readonly stored: Repository<RefreshToken>,
    private readonly db: SqlRunner,
  ) {}

  /** The stored refresh token of this hash, rotated or not, as an entity (revocation, introspection). */
  findStored(tokenHash: string): Promise<RefreshToken | null> {
    return this.stored.findOne({ where: { tokenHash } });
  }

  /** The refresh token stored under this hash, with its grant's state. */
  find(tokenHash: string): Promise<RefreshTokenRow | undefined> {
    return this.db.one<RefreshTokenRow>(FIND_REFRESH_TOKEN, { tokenHash });
  }

  /**
   * The writes that store a refresh token together with the event that issued it, for the caller's unit of work
   * ({@link SqlRunner.atomic}, {@link SqlRunner.sqliteUnit}): on PostgreSQL one statement, on SQLite two. With
   * `onlyIfChanged`, they run only when the write before them changed a row.
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
      ...AuditRepository.params(event),
    };
    if (this.db.postgres) return [{ statement: INSERT_REFRESH_TOKEN_POSTGRES, params, onlyIfChanged }];
    return [{ statement: INSERT_REFRESH_TOKEN, params, onlyIfChanged }, AuditRepository.insertOf(event, { onlyIfChanged })];
  }

  /** Stores a refresh token with its event. */
  async insert(token: NewRefreshToken, now: number, event: AuditEvent): Promise<void> {
    await this.db.atomic(this.insertWrites(token, now, event));
  }

  /**
   * Rotates the unrotated token `tokenHash` (keeping `sealed`, its successor sealed for the grace) and stores the
   * successor with its event, together; false (nothing written) when another request rotated it first.
   */
  async rotate(tokenHash: string, sealed: string | null, now: number, successor: NewRefreshToken, event: AuditEvent): Promise<boolean> {
    const [won] = await this.db.atomic([
      { statement: ROTATE_REFRESH_TOKEN, params: { now, tokenHash, sealed } },
      ...this.insertWrites(successor, now, event, true),
    ]);
    return won > 0;
  }

  /**
   * PostgreSQL: the rotation of a live token of this client and its successor with the event, in one statement;
   * the rotated token's grant, or undefined when it was not done (see {@link ROTATE_AND_ISSUE}), and always on
   * SQLite: the caller then goes the long way. An answer lost with the connection is read back by the successor's
   * hash.
   */
  rotateAndIssue(params: {
    now: number;
    tokenHash: string;
    clientId: string;
    nextHash: string;
    sealed: string | null;
    /** The key of the request's DPoP proof, or null. */
    jkt: string | null;
    event: AuditEvent;
  }): Promise<RotatedRow | undefined> {
    if (!this.db.postgres) return Promise.resolve(undefined);
    const { event, ...rest } = params;
    return this.db.oneOrOutcome<RotatedRow>(
      ROTATE_AND_ISSUE,
      { ...rest, ...AuditRepository.params(event) },
      { settle: PRESENTED_SETTLED, outcome: ROTATED_OUTCOME },
    );
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
