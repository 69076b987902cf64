import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { OwnerScope } from '../auth/callers';
import type { OrderSortKey } from './dto/list-orders-query.dto';
import { Order, type OrderStatus } from './order.entity';

/** Sort keys map to columns through this allow-list only. */
const SORT_COLUMNS: Record<OrderSortKey, string> = { createdAt: 'o.created_at', totalCents: 'o.total_cents' };

/** The orders module's one way to its table; every read of a person's orders keeps to the caller's OwnerScope. */
@Injectable()
export class OrdersRepository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The table, in the current unit of work when there is one. */
  private get orders(): Repository<Order> {
    return this.transactions.tx.getRepository(Order);
  }

  /** A page of the scope's orders (of one status), sorted by `sort` then id, with the total count. */
  async pageOf(
    scope: OwnerScope,
    options: { status?: OrderStatus; sort: OrderSortKey; descending: boolean; limit: number; offset: number },
  ): Promise<[Order[], number]> {
    const qb = scope.restrict(this.orders.createQueryBuilder('o'), 'o.user_id');
    if (options.status) qb.andWhere('o.status = :status', { status: options.status });
    const direction = options.descending ? 'DESC' : 'ASC';
    qb.orderBy(SORT_COLUMNS[options.sort], direction).addOrderBy('o.id', direction);
    return Promise.all([qb.clone().offset(options.offset).limit(options.limit).getMany(), qb.getCount()]);
  }

  /** One order within the scope (another person's order is not found). */
  findOne(scope: OwnerScope, orderId: string): Promise<Order | null> {
    return this.orders.findOne({ where: { id: orderId, ...scope.where('userId') } });
  }

  /** A new order from its fields (not stored yet). */
  build(fields: Partial<Order>): Order {
    return this.orders.create(fields);
  }

  async insert(order: Order): Promise<void> {
    await this.orders.insert(order);
  }

  /** Stores many orders at once. */
  async insertMany(orders: Order[]): Promise<void> {
    await this.orders.insert(orders);
  }
}
