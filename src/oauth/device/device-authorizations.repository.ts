import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, Statement, expiredRowsDeletion, sql } from '../../database/sql';

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

const COLUMNS = 'id, client_id, scope, resources, status, interval_seconds, next_poll_at, expires_at, user_id, grant_id';
const INSERT = sql`
  INSERT INTO device_authorizations
    (id, user_code_hash, client_id, scope, resources, status, interval_seconds, next_poll_at, created_at, expires_at, user_id, grant_id)
  VALUES (:id, :userCodeHash, :clientId, :scope, :resources, 'pending', :intervalSeconds, :now, :now, :expiresAt, NULL, NULL)`;
const BY_USER_CODE = new Statement(
  `SELECT ${COLUMNS} FROM device_authorizations WHERE user_code_hash = :userCodeHash AND expires_at > :now`,
);
const BY_DEVICE_CODE = new Statement(`SELECT ${COLUMNS} FROM device_authorizations WHERE id = :id AND client_id = :clientId`);
/** The grant an approval starts: the person's, for the request's client, scope and resources, with the session's login. */
const INSERT_GRANT = new Statement(`
  INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid, amr)
  SELECT :grantId, :userId, client_id, :scope, resources, CAST(:now AS bigint), CAST(:grantExpiresAt AS bigint), NULL,
    CAST(:authTime AS bigint), :sid, :amr
  FROM device_authorizations WHERE user_code_hash = :userCodeHash`);
const APPROVE = new Statement(`
  UPDATE device_authorizations SET status = 'approved', user_id = :userId, grant_id = :grantId
  WHERE user_code_hash = :userCodeHash AND status = 'pending' AND expires_at > :now`);
const DENY = new Statement(`
  UPDATE device_authorizations SET status = 'denied', user_id = :userId
  WHERE user_code_hash = :userCodeHash AND status = 'pending' AND expires_at > :now`);
/** A poll of a pending request: the earliest next one moves on, and on `slow_down` the interval grows too. */
const POLLED = sql`
  UPDATE device_authorizations SET interval_seconds = :intervalSeconds, next_poll_at = :nextPollAt WHERE id = :id AND status = 'pending'`;
/** The tokens of an approved request are handed out once: whoever marks it used first. */
const USE = sql`UPDATE device_authorizations SET status = 'used' WHERE id = :id AND status = 'approved'`;
const DELETE_EXPIRED = expiredRowsDeletion('device_authorizations');

/** The device authorization requests' one way to their table. */
@Injectable()
export class DeviceAuthorizationsRepository {
  constructor(private readonly db: SqlRunner) {}

  /** Stores a new request with its `device.authorization` event. */
  async insert(request: NewDeviceAuthorization, event: AuditEvent): Promise<void> {
    await this.db.atomic([{ statement: INSERT, params: { ...request } }, AuditRepository.insertOf(event)]);
  }

  /** The live request of this user code. */
  byUserCode(userCodeHash: string, now: number): Promise<DeviceAuthorizationRow | undefined> {
    return this.db.one<DeviceAuthorizationRow>(BY_USER_CODE, { userCodeHash, now });
  }

  /** The request of this device code, if it is this client's. */
  byDeviceCode(id: string, clientId: string): Promise<DeviceAuthorizationRow | undefined> {
    return this.db.one<DeviceAuthorizationRow>(BY_DEVICE_CODE, { id, clientId });
  }

  /** Approves a pending request and starts its grant, with the event, in one transaction; false when it was not pending. */
  async approve(approval: DeviceApproval, event: AuditEvent): Promise<boolean> {
    const [approved] = await this.db.atomic([
      { statement: APPROVE, params: { ...approval } },
      { statement: INSERT_GRANT, params: { ...approval }, onlyIfChanged: true },
      AuditRepository.insertOf(event, { onlyIfChanged: true }),
    ]);
    return approved > 0;
  }

  /** Denies a pending request, with the event; false when it was not pending. */
  async deny(userCodeHash: string, userId: string, now: number, event: AuditEvent): Promise<boolean> {
    const [denied] = await this.db.atomic([
      { statement: DENY, params: { userCodeHash, userId, now } },
      AuditRepository.insertOf(event, { onlyIfChanged: true }),
    ]);
    return denied > 0;
  }

  async polled(id: string, intervalSeconds: number, nextPollAt: number): Promise<void> {
    await this.db.run(POLLED, { id, intervalSeconds, nextPollAt });
  }

  /** Marks an approved request used; false when another poll did first. */
  async use(id: string): Promise<boolean> {
    return (await this.db.run(USE, { id })).affected > 0;
  }

  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
