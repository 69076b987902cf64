import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { bigintNumber } from '../database/transformers';
import { User } from '../users/user.entity';

export const ORDER_STATUSES = ['pending', 'paid', 'shipped', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** A person's orders go with them; each list order of a person's orders has its index, the id last (the tie-break). */
@Entity('orders')
@Index('idx_orders_user_created', ['userId', 'createdAt', 'id'])
@Index('idx_orders_user_total', ['userId', 'totalCents', 'id'])
@Index('idx_orders_user_status_created', ['userId', 'status', 'createdAt', 'id'])
export class Order {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string;

  @Column({ type: 'varchar', length: 200 })
  item: string;

  @Column({ type: 'integer' })
  quantity: number;

  @Column({ type: 'bigint', transformer: bigintNumber })
  unitPriceCents: number;

  @Column({ type: 'varchar', length: 3 })
  currency: string;

  @Column({ type: 'bigint', transformer: bigintNumber })
  totalCents: number;

  @Column({ type: 'varchar', length: 10 })
  status: OrderStatus;

  @EpochMsColumn()
  createdAt: number;
}
