import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';

/** A pushed authorization request (RFC 9126), named by the hash of its `request_uri`. */
@Entity('pushed_requests')
@Index('idx_pushed_requests_expires', ['expiresAt'])
export class PushedRequest {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 255 })
  clientId: string;

  /** The request's parameters, as JSON. */
  @Column({ type: 'text' })
  params: string;

  @EpochMsColumn()
  expiresAt: number;

  /** When it yielded an answer (a code or a refusal: once only); null before. */
  @EpochMsColumn({ nullable: true })
  usedAt: number | null;

  /** When its `prompt=login` or `max_age` sent the person to log in: only a later login answers it; null: none asked. */
  @EpochMsColumn({ nullable: true })
  loginAfter: number | null;
}
