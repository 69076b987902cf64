import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { PageQueryDto } from '../../common/pagination';
import { OneOf } from '../../common/validation';
import { ORDER_STATUSES, type OrderStatus } from '../order.entity';

export const ORDER_SORT_KEYS = ['createdAt', 'totalCents'] as const;
export type OrderSortKey = (typeof ORDER_SORT_KEYS)[number];

export class ListOrdersQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: ORDER_STATUSES })
  @IsOptional()
  @OneOf('status', ORDER_STATUSES)
  status?: OrderStatus;

  @ApiPropertyOptional({ enum: ORDER_SORT_KEYS, default: 'createdAt', description: 'ties are broken by id' })
  @IsOptional()
  @OneOf('sort', ORDER_SORT_KEYS)
  sort?: OrderSortKey;
}
