import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { bigintNumber } from '../database/transformers';

export const ORDER_STATUSES = ['pending', 'paid', 'shipped', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

@Entity('orders')
export class Order {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
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
