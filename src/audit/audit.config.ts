import { ConfigError, type Env } from '../config/env';

export class AuditConfig {
  static readonly variables = ['AUDIT_RETENTION_DAYS'] as const;
  /** How many days audit events are kept (0: forever). */
  readonly retentionDays: number;

  constructor(env: Env) {
    const raw = env.AUDIT_RETENTION_DAYS?.trim();
    if (raw === undefined || raw === '') this.retentionDays = 90;
    else if (/^\d{1,6}$/.test(raw)) this.retentionDays = Number(raw);
    else throw new ConfigError(`AUDIT_RETENTION_DAYS must be a whole number of days (0: keep forever), got "${env.AUDIT_RETENTION_DAYS}"`);
  }
}
