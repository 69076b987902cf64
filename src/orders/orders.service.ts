import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Callers, type OwnerScope } from '../auth/callers';
import type { AuthPrincipal } from '../auth/principal';
import { DomainError } from '../common/domain-error';
import { UsersError } from '../users/users.errors';
import type { Page } from '../common/pagination';
import { UsersService } from '../users/users.service';
import type { CreateOrderDto } from './dto/create-order.dto';
import type { ListOrdersQueryDto } from './dto/list-orders-query.dto';
import { OrdersError } from './orders.errors';
import { OrderResponseDto } from './dto/order-response.dto';
import { OrdersRepository } from './orders.repository';

/** A person's orders, under `/users/:userId`: the person themselves or an administrator reaches them. */
@Injectable()
export class OrdersService {
  constructor(
    private readonly orders: OrdersRepository,
    private readonly users: UsersService,
    private readonly callers: Callers,
  ) {}

  async list(principal: AuthPrincipal, userId: string, query: ListOrdersQueryDto): Promise<Page<OrderResponseDto>> {
    const scope = await this.existingOwner(principal, userId);
    const [rows, total] = await this.orders.pageOf(scope, {
      status: query.status,
      sort: query.sort ?? 'createdAt',
      descending: query.order === 'desc',
      limit: query.limit,
      offset: query.offset,
    });
    return { data: rows.map(OrderResponseDto.from), page: { limit: query.limit, offset: query.offset, total } };
  }

  async get(principal: AuthPrincipal, userId: string, orderId: string): Promise<OrderResponseDto> {
    // Kept to the person's orders: another person's order is simply not found.
    const order = await this.orders.findOne(await this.scopeOf(principal, userId), orderId);
    if (!order) throw new DomainError(OrdersError.NotFound, 'No such order.');
    return OrderResponseDto.from(order);
  }

  async create(principal: AuthPrincipal, userId: string, dto: CreateOrderDto): Promise<OrderResponseDto> {
    await this.existingOwner(principal, userId);
    const order = this.orders.build({
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

  /** The orders of the person the route names, for that person or an administrator; anyone else: not found. */
  private async scopeOf(principal: AuthPrincipal, userId: string): Promise<OwnerScope> {
    const scope = await this.callers.personScope(principal, userId);
    if (!scope) throw userNotFound();
    return scope;
  }

  /** As `scopeOf`, and the person exists (an administrator may name anyone). */
  private async existingOwner(principal: AuthPrincipal, userId: string): Promise<OwnerScope> {
    const scope = await this.scopeOf(principal, userId);
    if (principal.sub !== userId && !(await this.users.exists(userId))) throw userNotFound();
    return scope;
  }
}

function userNotFound(): DomainError {
  return new DomainError(UsersError.NotFound, 'No such user.');
}
