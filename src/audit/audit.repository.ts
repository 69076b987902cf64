import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import { SqlRunner, Statement, type StatementWrite } from '../database/sql';
import { AuditEvent } from './audit-event.entity';
import type { AuditEventsQueryDto } from './dto/audit-events-query.dto';
import { deleteBatchBefore } from '../database/prune-batch';

/**
 * An `audit_events` row as part of another module's statement on PostgreSQL (a data-modifying CTE, so that a change
 * and its event are one round trip): the insert and the named parameters {@link AuditRepository.params} binds
 * (`:now` is the time). For the repositories of the modules whose changes are audited, never for services.
 */
export const AUDIT_ROW = {
  insert: 'INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)',
  values: ':auditId, :now, :auditType, :auditActor, :auditUserId, :auditClientId, :auditAddress, :auditRequestId, :auditDetails',
} as const;

/** PostgreSQL: the CTE part that inserts the event once for each row the CTE `after` returns (none: no event). */
export function auditRowAfter(after: string): string {
  const values = AUDIT_ROW.values.replace(':now', 'CAST(:now AS bigint)');
  return `audit AS (${AUDIT_ROW.insert} SELECT ${values} FROM ${after})`;
}

// Hand-written: the event insert of every audited change, the code and refresh flows' included (a hot path).
const INSERT_AUDIT_EVENT = new Statement(`${AUDIT_ROW.insert} VALUES (${AUDIT_ROW.values})`);

/** The audit module's one way to its table. */
@Injectable()
export class AuditRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The table, in the current unit of work when there is one. */
  private get events(): Repository<AuditEvent> {
    return this.transactions.tx.getRepository(AuditEvent);
  }

  /** The parameters of {@link AUDIT_ROW} for an event (its time is the statement's `:now`). */
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

  /** The insert of an event as a write of the caller's unit of work ({@link SqlRunner.atomic}). */
  static insertOf(event: AuditEvent, options: { onlyIfChanged?: boolean } = {}): StatementWrite {
    return { statement: INSERT_AUDIT_EVENT, params: { now: event.at, ...AuditRepository.params(event) }, ...options };
  }

  async insert(event: AuditEvent): Promise<void> {
    const { statement, params } = AuditRepository.insertOf(event);
    await this.db.run(statement, params);
  }

  /** Runs `writes` and the event's insert in one transaction. */
  async insertWith(event: AuditEvent, writes: Parameters<SqlRunner['atomic']>[0]): Promise<void> {
    await this.db.atomic([...writes, AuditRepository.insertOf(event)]);
  }

  /** Runs `write` and, only if it changed a row, the event's insert, in one transaction; says whether it did. */
  async insertIfChanged(event: AuditEvent, write: Parameters<SqlRunner['atomic']>[0][number]): Promise<boolean> {
    const [changed] = await this.db.atomic([write, AuditRepository.insertOf(event, { onlyIfChanged: true })]);
    return changed > 0;
  }

  /** A page of events by the admin API's filters, newest first unless asked otherwise, with the total count. */
  page(query: AuditEventsQueryDto): Promise<[AuditEvent[], number]> {
    const qb = this.events.createQueryBuilder('e');
    if (query.type) qb.andWhere('e.type = :type', { type: query.type });
    if (query.user_id) qb.andWhere('e.user_id = :userId', { userId: query.user_id });
    if (query.client_id) qb.andWhere('e.client_id = :clientId', { clientId: query.client_id });
    if (query.from) qb.andWhere('e.at >= :from', { from: Date.parse(query.from) });
    if (query.to) qb.andWhere('e.at < :to', { to: Date.parse(query.to) });
    const order = query.order === 'asc' ? 'ASC' : 'DESC';
    qb.orderBy('e.at', order).addOrderBy('e.seq', order).take(query.limit).skip(query.offset);
    return qb.getManyAndCount();
  }

  /**
   * Deletes up to `batch` of the events older than `before` (epoch ms), found through the index on `at`, in one
   * statement planned at each run (the time moves); returns how many.
   */
  async deleteBefore(before: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.events, 'seq', 'at', before, batch);
  }
}
