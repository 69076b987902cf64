import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { AuditConfig } from './audit.config';
import { AuditService } from './audit.service';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** Forgets audit events older than AUDIT_RETENTION_DAYS, hourly (each instance; the delete is idempotent). */
@Injectable()
export class AuditRetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AuditRetentionService.name);
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly audit: AuditService,
    private readonly config: AuditConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.retentionDays === 0) return;
    this.timer = setInterval(() => void this.prune(), HOUR_MS).unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  async prune(now = Date.now()): Promise<number> {
    if (this.config.retentionDays === 0) return 0;
    try {
      return await this.audit.prune(now - this.config.retentionDays * DAY_MS);
    } catch (error) {
      this.logger.warn(`could not prune audit events: ${(error as Error).message}`);
      return 0;
    }
  }
}
