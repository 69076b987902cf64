import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuthPrincipal } from '../auth/principal';
import { DomainError } from '../common/domain-error';
import { UsersError } from '../users/users.errors';
import type { Page } from '../common/pagination';
import { UsersService } from '../users/users.service';
import type { CreateOrderDto } from './dto/create-order.dto';
import type { ListOrdersQueryDto, OrderSortKey } from './dto/list-orders-query.dto';
import { OrdersError } from './orders.errors';
import { OrderResponseDto } from './dto/order-response.dto';
import { Order } from './order.entity';

const SORT_COLUMNS: Record<OrderSortKey, string> = { createdAt: 'o.created_at', totalCents: 'o.total_cents' };

@Injectable()
export class OrdersService {
  constructor(
    @InjectRepository(Order) private readonly orders: Repository<Order>,
    private readonly users: UsersService,
  ) {}

  async list(principal: AuthPrincipal, userId: string, query: ListOrdersQueryDto): Promise<Page<OrderResponseDto>> {
    await this.ownerMustExist(principal, userId);
    const qb = this.orders.createQueryBuilder('o').where('o.user_id = :userId', { userId });
    if (query.status) qb.andWhere('o.status = :status', { status: query.status });
    const direction = query.order === 'desc' ? 'DESC' : 'ASC';
    qb.orderBy(SORT_COLUMNS[query.sort ?? 'createdAt'], direction).addOrderBy('o.id', direction);
    const [rows, total] = await Promise.all([qb.clone().offset(query.offset).limit(query.limit).getMany(), qb.getCount()]);
    return { data: rows.map(OrderResponseDto.from), page: { limit: query.limit, offset: query.offset, total } };
  }

  async get(principal: AuthPrincipal, userId: string, orderId: string): Promise<OrderResponseDto> {
    await this.users.accessibleUserId(principal, userId);
    // Scoped by owner as well as id: another user's order is simply not found.
    const order = await this.orders.findOne({ where: { id: orderId, userId } });
    if (!order) throw new DomainError(OrdersError.NotFound, 'No such order.');
    return OrderResponseDto.from(order);
  }

  async create(principal: AuthPrincipal, userId: string, dto: CreateOrderDto): Promise<OrderResponseDto> {
    await this.ownerMustExist(principal, userId);
    const order = this.orders.create({
      id: randomUUID(),
      userId,
      item: dto.item,
      quantity: dto.quantity,
      unitPriceCents: dto.unitPriceCents,
      currency: dto.currency,
      totalCents: dto.quantity * dto.unitPriceCents,
      status: 'pending',
      createdAt: Date.now(),
    });
    try {
      await this.orders.insert(order);
    } catch (error) {
      // The owner was deleted between the check and the insert (foreign key).
      if (!(await this.users.exists(userId))) throw userNotFound();
      throw error;
    }
    return OrderResponseDto.from(order);
  }

  private async ownerMustExist(principal: AuthPrincipal, userId: string): Promise<void> {
    const actor = await this.users.accessibleUserId(principal, userId);
    if (actor.id !== userId && !(await this.users.exists(userId))) throw userNotFound();
  }
}

function userNotFound(): DomainError {
  return new DomainError(UsersError.NotFound, 'No such user.');
}
