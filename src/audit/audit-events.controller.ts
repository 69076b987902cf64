import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { Access } from '../auth/auth.decorators';
import { ApiProblems } from '../common/openapi';
import type { Page } from '../common/pagination';
import { AuditScope } from './audit.scopes';
import { type AuditEventView, AuditService } from './audit.service';
import { AuditEventsQueryDto } from './dto/audit-events-query.dto';

/** The audit trail, for administrators with a token carrying `audit:read`. */
@ApiTags('admin')
@ApiProblems(503)
@Controller('admin/audit-events')
@Access({ scopes: [AuditScope.read], people: ['admin'] })
export class AuditEventsController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOkResponse({ description: 'A page of audit events, newest first unless order=asc' })
  list(@Query() query: AuditEventsQueryDto): Promise<Page<AuditEventView>> {
    return this.audit.list(query);
  }
}
