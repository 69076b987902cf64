import type { Order, OrderStatus } from '../order.entity';

export class OrderResponseDto {
  id: string;
  userId: string;
  item: string;
  quantity: number;
  unitPriceCents: number;
  currency: string;
  totalCents: number;
  status: OrderStatus;
  createdAt: string;

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
