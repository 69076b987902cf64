import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import pino from 'pino';
import { LessThan, type Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { SqlRunner, Statement, type StatementWrite, type Write } from '../database/sql';
import { type Page } from '../common/pagination';
import { ACCESS_LOGGER } from '../logging/logging.module';
import { AuditEvent } from './audit-event.entity';
import type { AuditBy, AuditContext, AuditEventInput } from './audit-events';
import type { AuditEventsQueryDto } from './dto/audit-events-query.dto';

/** An event as the admin API shows it. */
export interface AuditEventView {
  id: string;
  at: string;
  type: string;
  actor: string;
  user_id: string | null;
  client_id: string | null;
  address: string | null;
  request_id: string | null;
  details: Record<string, unknown> | null;
}

/**
 * The columns of an `audit_events` row and the named parameters {@link AuditService.params} binds to them, for the
 * hot paths that write the event in the same SQL statement as the change it describes (`:now` is the time).
 */
export const AUDIT_INSERT = 'INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)';
export const AUDIT_VALUES =
  ':auditId, :now, :auditType, :auditActor, :auditUserId, :auditClientId, :auditAddress, :auditRequestId, :auditDetails';
const INSERT_AUDIT_EVENT = new Statement(`${AUDIT_INSERT} VALUES (${AUDIT_VALUES})`);

/**
 * The audit trail: every security event is a row, written in the same transaction as the change it describes,
 * and, once that is committed, one structured log line (`"audit": {…}`). Neither ever holds a secret.
 */
@Injectable()
export class AuditService {
  constructor(
    @InjectRepository(AuditEvent) private readonly events: Repository<AuditEvent>,
    config: AppConfig,
    private readonly db: SqlRunner,
    @Optional() @Inject(ACCESS_LOGGER) logger?: pino.Logger,
  ) {
    // The command line has no application logger: its audit lines go to stderr (stdout is its JSON answer).
    this.logger = logger ?? pino({ level: config.logLevel }, pino.destination(2));
  }

  private readonly logger: pino.Logger;

  /** The row for an event happening now. */
  static event(input: AuditEventInput, context: AuditContext, at = Date.now()): AuditEvent {
    return {
      id: randomUUID(),
      at,
      type: input.type,
      actor: input.actor,
      userId: input.userId ?? null,
      clientId: input.clientId ?? null,
      address: context.address,
      requestId: context.requestId,
      details: input.details ? JSON.stringify(input.details) : null,
    };
  }

  /** The parameters of {@link AUDIT_VALUES} for an event (its time is the statement's `:now`). */
  static params(event: AuditEvent): Record<string, unknown> {
    return {
      auditId: event.id,
      auditType: event.type,
      auditActor: event.actor,
      auditUserId: event.userId,
      auditClientId: event.clientId,
      auditAddress: event.address,
      auditRequestId: event.requestId,
      auditDetails: event.details,
    };
  }

  /** Records an event that goes with no other change (a failed login), and logs it. */
  async record(input: AuditEventInput, context: AuditContext): Promise<AuditEvent> {
    const event = AuditService.event(input, context);
    await this.save(event);
    return event;
  }

  /** {@link record} for an event already built (by {@link AuditService.event}). */
  async save(event: AuditEvent): Promise<void> {
    await this.db.run(INSERT_AUDIT_EVENT, AuditService.writeOf(event).params);
    this.log(event);
  }

  /**
   * Makes a change (`writes`, see {@link SqlRunner.atomic}) and records its event in one transaction, then logs
   * the event: the usual shape of a change that is a security event (a client created, a consent given).
   */
  async recorded(input: Omit<AuditEventInput, 'actor'>, by: AuditBy, writes: Write[]): Promise<void> {
    const event = AuditService.event({ ...input, actor: by.actor }, by.context);
    await this.db.atomic([...writes, AuditService.writeOf(event)]);
    this.log(event);
  }

  /** The insert of an event, to go in a group of {@link SqlRunner.atomic} writes with its change. */
  static writeOf(event: AuditEvent, options: { onlyIfChanged?: boolean } = {}): StatementWrite {
    return { statement: INSERT_AUDIT_EVENT, params: { now: event.at, ...AuditService.params(event) }, ...options };
  }

  /** The log line of an event whose row is committed. */
  log(event: AuditEvent): void {
    this.logger.info(
      { audit: { ...event, at: new Date(event.at).toISOString(), details: event.details ? JSON.parse(event.details) : undefined } },
      'audit event',
    );
  }

  async list(query: AuditEventsQueryDto): Promise<Page<AuditEventView>> {
    const qb = this.events.createQueryBuilder('e');
    if (query.type) qb.andWhere('e.type = :type', { type: query.type });
    if (query.user_id) qb.andWhere('e.user_id = :userId', { userId: query.user_id });
    if (query.client_id) qb.andWhere('e.client_id = :clientId', { clientId: query.client_id });
    if (query.from) qb.andWhere('e.at >= :from', { from: Date.parse(query.from) });
    if (query.to) qb.andWhere('e.at < :to', { to: Date.parse(query.to) });
    const order = query.order === 'asc' ? 'ASC' : 'DESC';
    qb.orderBy('e.at', order).addOrderBy('e.seq', order).take(query.limit).skip(query.offset);
    const [rows, total] = await qb.getManyAndCount();
    return { data: rows.map(view), page: { limit: query.limit, offset: query.offset, total } };
  }

  /** Forgets the events older than `before` (epoch ms); returns how many. */
  async prune(before: number): Promise<number> {
    const result = await this.events.delete({ at: LessThan(before) });
    return result.affected ?? 0;
  }
}

function view(event: AuditEvent): AuditEventView {
  return {
    id: event.id,
    at: new Date(event.at).toISOString(),
    type: event.type,
    actor: event.actor,
    user_id: event.userId,
    client_id: event.clientId,
    address: event.address,
    request_id: event.requestId,
    details: event.details ? (JSON.parse(event.details) as Record<string, unknown>) : null,
  };
}
