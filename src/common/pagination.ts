import { IsOptional } from 'class-validator';
import { OneOf, OptionalIntQuery, SORT_ORDERS, type SortOrder } from './validation';

/** `limit`, `offset` and `order`, shared by every list; a feature's query DTO extends it and adds `sort`. */
export class PageQueryDto {
  @OptionalIntQuery('limit', 1, 100)
  limit: number = 20;

  @OptionalIntQuery('offset', 0, 1_000_000_000)
  offset: number = 0;

  @IsOptional()
  @OneOf('order', SORT_ORDERS)
  order: SortOrder = 'asc';
}

export interface Page<T> {
  data: T[];
  page: { limit: number; offset: number; total: number };
}
