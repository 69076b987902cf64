import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import pino from 'pino';
import { AppConfig } from '../config/app-config';
import type { StatementWrite, Write } from '../database/sql';
import { type Page } from '../common/pagination';
import { ACCESS_LOGGER } from '../logging/logging.module';
import type { AuditEvent } from './audit-event.entity';
import type { AuditBy, AuditContext, AuditEventInput } from './audit-events';
import { AuditRepository } from './audit.repository';
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
 * The audit trail: every security event is a row, written in the same transaction as the change it describes,
 * and, once that is committed, one structured log line (`"audit": {…}`). Neither ever holds a secret.
 */
@Injectable()
export class AuditService {
  constructor(
    private readonly events: AuditRepository,
    config: AppConfig,
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

  /** The parameters of an event's row, for a repository whose statement writes it too (see `AUDIT_ROW`). */
  static params(event: AuditEvent): Record<string, unknown> {
    return AuditRepository.params(event);
  }

  /** Records an event that goes with no other change (a failed login), and logs it. */
  async record(input: AuditEventInput, context: AuditContext): Promise<AuditEvent> {
    const event = AuditService.event(input, context);
    await this.save(event);
    return event;
  }

  /** Stores an event as part of the caller's unit of work, which logs it once that has committed. */
  async write(event: AuditEvent): Promise<void> {
    await this.events.insert(event);
  }

  /** {@link record} for an event already built (by {@link AuditService.event}). */
  async save(event: AuditEvent): Promise<void> {
    await this.events.insert(event);
    this.log(event);
  }

  /**
   * Makes a change (`writes`, see {@link SqlRunner.atomic}) and records its event in one transaction, then logs
   * the event: the usual shape of a change that is a security event (a client created, a consent given).
   */
  async recorded(input: Omit<AuditEventInput, 'actor'>, by: AuditBy, writes: Write[]): Promise<void> {
    const event = AuditService.event({ ...input, actor: by.actor }, by.context);
    await this.events.insertWith(event, writes);
    this.log(event);
  }

  /**
   * {@link recorded} for a change that may find its row changed meanwhile (a compare-and-set `write`): the event is
   * stored and logged only if the write changed a row. Says whether it did.
   */
  async recordedIfChanged(input: Omit<AuditEventInput, 'actor'>, by: AuditBy, write: Write): Promise<boolean> {
    const event = AuditService.event({ ...input, actor: by.actor }, by.context);
    const changed = await this.events.insertIfChanged(event, write);
    if (changed) this.log(event);
    return changed;
  }

  /** The insert of an event, to go in a group of {@link SqlRunner.atomic} writes with its change. */
  static writeOf(event: AuditEvent, options: { onlyIfChanged?: boolean } = {}): StatementWrite {
    return AuditRepository.insertOf(event, options);
  }

  /** The log line of an event whose row is committed. */
  log(event: AuditEvent): void {
    this.logger.info(
      { audit: { ...event, at: new Date(event.at).toISOString(), details: event.details ? JSON.parse(event.details) : undefined } },
      'audit event',
    );
  }

  async list(query: AuditEventsQueryDto): Promise<Page<AuditEventView>> {
    const [rows, total] = await this.events.page(query);
    return { data: rows.map(view), page: { limit: query.limit, offset: query.offset, total } };
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
