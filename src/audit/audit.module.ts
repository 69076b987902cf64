import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigModule } from '../config/config.module';
import { AuditRepository } from './audit.repository';
import { AuditEvent } from './audit-event.entity';
import { AuditConfig } from './audit.config';
import { AuditEventsController } from './audit-events.controller';
import { AuditRetention } from './audit.retention';
import { AuditService } from './audit.service';

/**
 * The audit trail of security events (`audit_events`, see `audit-events.ts` for the types), its log lines, its
 * retention and `GET /admin/audit-events`. Features record their events through {@link AuditService}.
 */
@Module({
  imports: [TypeOrmModule.forFeature([AuditEvent]), AppConfigModule.forFeature(AuditConfig)],
  controllers: [AuditEventsController],
  providers: [AuditService, AuditRepository, AuditRetention],
  exports: [AuditService],
})
export class AuditModule {}
