import { ApiProperty } from '@nestjs/swagger';
import { PageInfoDto } from '../../common/pagination';
import { ORDER_STATUSES, type Order, type OrderStatus } from '../order.entity';

export class OrderResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) userId: string;
  @ApiProperty() item: string;
  @ApiProperty({ type: 'integer' }) quantity: number;
  @ApiProperty({ type: 'integer' }) unitPriceCents: number;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ type: 'integer', description: 'quantity × unitPriceCents' }) totalCents: number;
  @ApiProperty({ enum: ORDER_STATUSES }) status: OrderStatus;
  @ApiProperty({ format: 'date-time' }) createdAt: string;

  static from(order: Order): OrderResponseDto {
    const dto = new OrderResponseDto();
    dto.id = order.id;
    dto.userId = order.userId;
    dto.item = order.item;
    dto.quantity = order.quantity;
    dto.unitPriceCents = order.unitPriceCents;
    dto.currency = order.currency;
    dto.totalCents = order.totalCents;
    dto.status = order.status;
    dto.createdAt = new Date(order.createdAt).toISOString();
    return dto;
  }
}

export class OrderPageResponseDto {
  @ApiProperty({ type: [OrderResponseDto] }) data: OrderResponseDto[];
  @ApiProperty({ type: PageInfoDto }) page: PageInfoDto;
}
