import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { OneOf, OptionalIntQuery, SORT_ORDERS, type SortOrder } from './validation';

/** `limit`, `offset` and `order`, shared by every list; a feature's query DTO extends it and adds `sort`. */
export class PageQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20, type: 'integer' })
  @OptionalIntQuery('limit', 1, 100)
  limit: number = 20;

  @ApiPropertyOptional({ minimum: 0, maximum: 1_000_000_000, default: 0, type: 'integer' })
  @OptionalIntQuery('offset', 0, 1_000_000_000)
  offset: number = 0;

  @ApiPropertyOptional({ enum: SORT_ORDERS, default: 'asc' })
  @IsOptional()
  @OneOf('order', SORT_ORDERS)
  order: SortOrder = 'asc';
}

export interface Page<T> {
  data: T[];
  page: { limit: number; offset: number; total: number };
}

export class PageInfoDto {
  @ApiProperty() limit: number;
  @ApiProperty() offset: number;
  @ApiProperty({ description: 'Number of items matching the filter' }) total: number;
}
