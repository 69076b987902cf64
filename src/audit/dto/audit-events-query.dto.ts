import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsUUID, Length, ValidateBy } from 'class-validator';
import { PageQueryDto } from '../../common/pagination';
import { OneOf, SORT_ORDERS, SingleLine, type SortOrder } from '../../common/validation';
import { AUDIT_EVENT_TYPES, type AuditEventType } from '../audit-events';

const TIME = { format: 'date-time', description: 'RFC 3339 with a time zone, e.g. 2026-11-24T08:00:00Z' } as const;
/** RFC 3339 (the ISO 8601 profile the API answers in) with its time zone: what `Date.parse` reads the same everywhere. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const ISO_TIME = (field: string) =>
  ValidateBy({
    name: 'dateTime',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && DATE_TIME.test(value) && Number.isFinite(Date.parse(value)),
      defaultMessage: () => `${field} must be a date-time with its time zone, e.g. 2026-11-24T08:00:00Z`,
    },
  });

/** `GET /admin/audit-events`: filters and paging; newest first unless `order=asc`. */
export class AuditEventsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: AUDIT_EVENT_TYPES })
  @IsOptional()
  @OneOf('type', AUDIT_EVENT_TYPES)
  type?: AuditEventType;

  @ApiPropertyOptional({ format: 'uuid', description: 'events about this person' })
  @IsOptional()
  @IsUUID('all', { message: 'user_id must be a UUID' })
  user_id?: string;

  @ApiPropertyOptional({ maxLength: 255, description: 'events about this client (a registered id, or a client ID URL)' })
  @IsOptional()
  @Length(1, 255, { message: 'client_id must be 1 to 255 characters' })
  @SingleLine('client_id')
  client_id?: string;

  @ApiPropertyOptional({ ...TIME, description: `at or after this time; ${TIME.description}` })
  @IsOptional()
  @ISO_TIME('from')
  from?: string;

  @ApiPropertyOptional({ ...TIME, description: `before this time; ${TIME.description}` })
  @IsOptional()
  @ISO_TIME('to')
  to?: string;

  @ApiPropertyOptional({ enum: SORT_ORDERS, default: 'desc', description: 'by time' })
  @IsOptional()
  @OneOf('order', SORT_ORDERS)
  override order: SortOrder = 'desc';
}
