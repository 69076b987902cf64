import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { MoreThan, type Repository } from 'typeorm';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AuditRepository } from '../../audit/audit.repository';
import { SqlRunner } from '../../database/sql';
import { DeviceAuthorization } from '../entities/device-authorization.entity';
import { Grant } from '../entities/grant.entity';
import { deleteBatchBefore } from '../../database/prune-batch';

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'used';

export interface DeviceAuthorizationRow {
  id: string;
  client_id: string;
  scope: string;
  resources: string | null;
  status: DeviceStatus;
  interval_seconds: number;
  next_poll_at: string | number;
  expires_at: string | number;
  user_id: string | null;
  grant_id: string | null;
}

export interface NewDeviceAuthorization {
  id: string;
  userCodeHash: string;
  clientId: string;
  scope: string;
  resources: string | null;
  intervalSeconds: number;
  now: number;
  expiresAt: number;
}

/** What the approval of a request writes: the grant it starts (with the session's login) and the request's new state. */
export interface DeviceApproval {
  userCodeHash: string;
  userId: string;
  grantId: string;
  now: number;
  grantExpiresAt: number;
  authTime: number;
  sid: string;
  amr: string | null;
  /** The request's scope less what the person's role cannot grant. */
  scope: string;
}

/** The request as its callers read it (the columns' names). */
function rowOf(request: DeviceAuthorization): DeviceAuthorizationRow {
  return {
    id: request.id,
    client_id: request.clientId,
    scope: request.scope,
    resources: request.resources,
    status: request.status as DeviceStatus,
    interval_seconds: request.intervalSeconds,
    next_poll_at: request.nextPollAt,
    expires_at: request.expiresAt,
    user_id: request.userId,
    grant_id: request.grantId,
  };
}

/** The device authorization requests' one way to their table. */
@Injectable()
export class DeviceAuthorizationsRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The tables, in the current unit of work when there is one. */
  private get rows(): Repository<DeviceAuthorization> {
    return this.transactions.tx.getRepository(DeviceAuthorization);
  }

  private get grants(): Repository<Grant> {
    return this.transactions.tx.getRepository(Grant);
  }

  /** An event's insert, in the current unit of work. */
  private async audit(event: AuditEvent): Promise<void> {
    const { statement, params } = AuditRepository.insertOf(event);
    await this.db.run(statement, params);
  }

  /** Stores a new request with its `device.authorization` event. */
  async insert(request: NewDeviceAuthorization, event: AuditEvent): Promise<void> {
    const { now, ...fields } = request;
    await this.transactions.withTransaction(async () => {
      await this.rows.insert({ ...fields, status: 'pending', nextPollAt: now, createdAt: now, userId: null, grantId: null });
      await this.audit(event);
    });
  }

  /** The live request of this user code. */
  async byUserCode(userCodeHash: string, now: number): Promise<DeviceAuthorizationRow | undefined> {
    const request = await this.rows.findOne({ where: { userCodeHash, expiresAt: MoreThan(now) } });
    return request ? rowOf(request) : undefined;
  }

  /** The request of this device code, if it is this client's. */
  async byDeviceCode(id: string, clientId: string): Promise<DeviceAuthorizationRow | undefined> {
    const request = await this.rows.findOne({ where: { id, clientId } });
    return request ? rowOf(request) : undefined;
  }

  /** Approves a pending request and starts its grant, with the event, in one transaction; false when it was not pending. */
  approve(approval: DeviceApproval, event: AuditEvent): Promise<boolean> {
    const { userCodeHash, userId, grantId, now } = approval;
    return this.transactions.withTransaction(async () => {
      // One conditional UPDATE picks the one approval; the grant and event follow only for it.
      const pending = { userCodeHash, status: 'pending', expiresAt: MoreThan(now) };
      if (!(await this.rows.update(pending, { status: 'approved', userId, grantId })).affected) return false;
      const request = await this.rows.findOneOrFail({ select: { clientId: true, resources: true }, where: { userCodeHash } });
      await this.grants.insert({
        id: grantId,
        userId,
        clientId: request.clientId,
        scope: approval.scope,
        resources: request.resources,
        createdAt: now,
        expiresAt: approval.grantExpiresAt,
        revokedAt: null,
        authTime: approval.authTime,
        sid: approval.sid,
        amr: approval.amr,
      });
      await this.audit(event);
      return true;
    });
  }

  /** Denies a pending request, with the event; false when it was not pending. */
  deny(userCodeHash: string, userId: string, now: number, event: AuditEvent): Promise<boolean> {
    return this.transactions.withTransaction(async () => {
      const pending = { userCodeHash, status: 'pending', expiresAt: MoreThan(now) };
      if (!(await this.rows.update(pending, { status: 'denied', userId })).affected) return false;
      await this.audit(event);
      return true;
    });
  }

  /** A poll of a pending request: the earliest next one moves on, and on `slow_down` the interval grows too. */
  async polled(id: string, intervalSeconds: number, nextPollAt: number): Promise<void> {
    await this.rows.update({ id, status: 'pending' }, { intervalSeconds, nextPollAt });
  }

  /** Marks an approved request used; false when another poll did first (one conditional UPDATE: tokens once). */
  async use(id: string): Promise<boolean> {
    return Boolean((await this.rows.update({ id, status: 'approved' }, { status: 'used' })).affected);
  }

  /** Deletes up to `batch` requests expired before `cutoff` (one statement, as the retention job's other deletes). */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.rows, 'id', 'expires_at', cutoff, batch);
  }
}
