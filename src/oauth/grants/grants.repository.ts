import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AUDIT_ROW, AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, Statement, type StatementWrite, epochMs, sql } from '../../database/sql';
import { Grant } from '../entities/grant.entity';
import { type LoginRef, loginOf } from '../oidc/id-tokens';

/**
 * The `token.exchanged` event, written only while the subject token's grant (and the actor token's, when it is a
 * person's) is live: the liveness check and the record are one statement, so a grant revoked on another instance a
 * moment ago is seen (the in-memory revoked list may lag REVOCATION_SYNC_SECONDS) and no exchange goes unrecorded.
 */
const RECORD_IF_LIVE = new Statement(`
  ${AUDIT_ROW.insert}
  SELECT :auditId, CAST(:now AS bigint), :auditType, :auditActor, :auditUserId, :auditClientId, :auditAddress, :auditRequestId,
    :auditDetails
  WHERE EXISTS (SELECT 1 FROM grants WHERE id = :subjectGrantId AND revoked_at IS NULL AND expires_at > :now)
    AND EXISTS (SELECT 1 FROM clients WHERE id = :auditClientId)
    AND (CAST(:actorGrantId AS varchar(36)) IS NULL
      OR EXISTS (SELECT 1 FROM grants WHERE id = :actorGrantId AND revoked_at IS NULL AND expires_at > :now))`);

/**
 * A code's or refresh token's grant state, read with its own row: `grant_revoked_at`, `grant_expires_at`,
 * `grant_resources`, `grant_auth_time`, `grant_sid` and `grant_amr` (null when the grant is gone), each by the
 * grant's key (`grantId`, the row's column) in a subquery. A join made SQLite's hot reads more than twice as slow.
 */
export function grantStateColumns(grantId: string): string {
  return ['revoked_at', 'expires_at', 'resources', 'auth_time', 'sid', 'amr']
    .map((column) => `(SELECT g.${column} FROM grants g WHERE g.id = ${grantId}) AS grant_${column}`)
    .join(', ');
}

const REVOKE_GRANT = sql`UPDATE grants SET revoked_at = :now WHERE id = :grantId AND revoked_at IS NULL`;
const UNREVOKED_GRANTS_OF_USER = sql`SELECT id FROM grants WHERE user_id = :userId AND revoked_at IS NULL`;
/** The grant's refresh tokens not rotated yet (the rotated ones are kept: presenting one is reuse). */
const DELETE_LIVE_REFRESH_TOKENS = sql`DELETE FROM refresh_tokens WHERE grant_id = :grantId AND rotated_at IS NULL`;

/**
 * A person's grants in force (not revoked, not expired), each with the newest token issued under it: the refresh
 * tokens are kept when rotated, so the newest one's creation is the last redemption or refresh.
 */
const LIVE_GRANTS = sql`
  SELECT g.client_id, c.name, g.scope, g.created_at, MAX(r.created_at) AS last_token_at
  FROM grants g
  JOIN clients c ON c.id = g.client_id
  LEFT JOIN refresh_tokens r ON r.grant_id = g.id
  WHERE g.user_id = :userId AND g.revoked_at IS NULL AND g.expires_at > :now
  GROUP BY g.id, g.client_id, c.name, g.scope, g.created_at`;
/** A live grant and its login, for tokens issued from it (a device grant's). */
const ISSUABLE_GRANT = sql`
  SELECT id, user_id, scope, expires_at, resources, auth_time, sid, amr FROM grants
  WHERE id = :grantId AND revoked_at IS NULL AND expires_at > :now`;
const UNREVOKED_GRANTS = sql`SELECT id FROM grants WHERE user_id = :userId AND client_id = :clientId AND revoked_at IS NULL`;

interface LiveGrantRow {
  client_id: string;
  name: string;
  scope: string;
  created_at: string | number;
  last_token_at: string | number | null;
}

/** A grant in force as the connected-apps page lists it. */
export interface LiveGrant {
  clientId: string;
  clientName: string;
  scope: string;
  createdAt: number;
  /** When the newest token under it was issued (null: none since its code). */
  lastTokenAt: number | null;
}

/** The grants' one way to their table (a grant's revocation also deletes its live refresh tokens). */
/** A live grant as {@link GrantsRepository.issuable} reads it. */
export interface IssuableGrant {
  id: string;
  userId: string;
  scope: string;
  expiresAt: number;
  resources: string | null;
  login: LoginRef | undefined;
}

@Injectable()
export class GrantsRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The table, in the current unit of work when there is one. */
  private get grants(): Repository<Grant> {
    return this.transactions.tx.getRepository(Grant);
  }

  /** Whether a grant exists, is not revoked and has not expired at `now`. */
  async isLive(grantId: string, now: number): Promise<boolean> {
    const grant = await this.grants.findOne({ where: { id: grantId }, select: { id: true, revokedAt: true, expiresAt: true } });
    return Boolean(grant && grant.revokedAt === null && grant.expiresAt > now);
  }

  /**
   * A grant's revocation as writes of the caller's unit of work: the grant marked, its unrotated refresh tokens
   * deleted.
   */
  static revocationOf(grantId: string, now: number): StatementWrite[] {
    return [
      { statement: REVOKE_GRANT, params: { grantId, now } },
      { statement: DELETE_LIVE_REFRESH_TOKENS, params: { grantId } },
    ];
  }

  /** Runs `writes` (revocations, the revoked list's entries) and the event's insert in one transaction. */
  async writeWith(writes: StatementWrite[], event: AuditEvent): Promise<void> {
    await this.db.atomic([...writes, AuditRepository.insertOf(event)]);
  }

  /** A live grant with what issuing tokens from it needs; undefined when revoked, expired or gone. */
  async issuable(grantId: string, now: number): Promise<IssuableGrant | undefined> {
    const row = await this.db.one<{
      id: string;
      user_id: string;
      scope: string;
      expires_at: string | number;
      resources: string | null;
      auth_time: string | number | null;
      sid: string | null;
      amr: string | null;
    }>(ISSUABLE_GRANT, { grantId, now });
    if (!row) return undefined;
    return {
      id: row.id,
      userId: row.user_id,
      scope: row.scope,
      expiresAt: epochMs(row.expires_at),
      resources: row.resources,
      login: loginOf(row.auth_time, row.sid, null, row.amr),
    };
  }

  /** A person's grants in force at `now`, with their clients' names. */
  async liveOf(userId: string, now: number): Promise<LiveGrant[]> {
    const { rows } = await this.db.run<LiveGrantRow>(LIVE_GRANTS, { userId, now });
    return rows.map((row) => ({
      clientId: row.client_id,
      clientName: row.name,
      scope: row.scope,
      createdAt: epochMs(row.created_at),
      lastTokenAt: epochMs(row.last_token_at, true),
    }));
  }

  /** The ids of a person's grants of a client not revoked yet. */
  /** The ids of a person's grants not revoked yet, with every client. */
  async unrevokedIdsOf(userId: string): Promise<string[]> {
    return (await this.db.run<{ id: string }>(UNREVOKED_GRANTS_OF_USER, { userId })).rows.map((row) => row.id);
  }

  async unrevokedIds(userId: string, clientId: string): Promise<string[]> {
    return (await this.db.run<{ id: string }>(UNREVOKED_GRANTS, { userId, clientId })).rows.map((row) => row.id);
  }

  /**
   * Records a token exchange's event if the subject token's grant (and the actor token's, when given) is live at
   * the event's time; false (nothing written) when not.
   */
  async recordIfLive(event: AuditEvent, subjectGrantId: string, actorGrantId: string | null): Promise<boolean> {
    const { affected } = await this.db.run(RECORD_IF_LIVE, {
      now: event.at,
      ...AuditRepository.params(event),
      subjectGrantId,
      actorGrantId,
    });
    return affected > 0;
  }
}
