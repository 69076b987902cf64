import { Injectable } from '@nestjs/common';
import { ExpiringRows, type PruneStep, type PruneSteps } from '../retention/retention-step';
import { AuditConfig } from './audit.config';
import { AuditRepository } from './audit.repository';

const DAY_MS = 86_400_000;

/** Audit events older than AUDIT_RETENTION_DAYS (0: kept forever). */
@ExpiringRows()
@Injectable()
export class AuditRetention implements PruneSteps {
  constructor(
    private readonly events: AuditRepository,
    private readonly config: AuditConfig,
  ) {}

  pruneSteps(): PruneStep[] {
    const keptFor = this.config.retentionDays * DAY_MS;
    if (keptFor === 0) return [];
    return [{ table: 'audit_events', deleteBatch: (now, batch) => this.events.deleteBefore(now - keptFor, batch) }];
  }
}
