import { type Env, wholeDays } from '../config/env';

export class AuditConfig {
  static readonly variables = ['AUDIT_RETENTION_DAYS'] as const;
  /** How many days audit events are kept (0: forever). */
  readonly retentionDays: number;

  constructor(env: Env) {
    this.retentionDays = wholeDays(env, 'AUDIT_RETENTION_DAYS', 90, 0);
  }
}
