import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/** One security event (see `AUDIT_EVENT_TYPES`). Users and clients are kept by id, without foreign keys: the
 * trail outlives what it speaks of. */
@Entity('audit_events')
@Index('idx_audit_events_at', ['at', 'seq'])
@Index('idx_audit_events_user', ['userId', 'at', 'seq'])
@Index('idx_audit_events_client', ['clientId', 'at', 'seq'])
export class AuditEvent {
  /** Insertion order: the tie-break of events in the same millisecond. Never shown. */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  seq?: string;

  @Column({ type: 'varchar', length: 36 })
  id: string;

  @EpochMsColumn()
  at: number;

  @Column({ type: 'varchar', length: 40 })
  type: string;

  @Column({ type: 'varchar', length: 300 })
  actor: string;

  @Column({ type: 'varchar', length: 36, nullable: true })
  userId: string | null;

  @Column({ type: 'varchar', length: 255, nullable: true })
  clientId: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  address: string | null;

  @Column({ type: 'varchar', length: 128, nullable: true })
  requestId: string | null;

  /** A JSON object of plain facts, or NULL. */
  @Column({ type: 'text', nullable: true })
  details: string | null;
}
