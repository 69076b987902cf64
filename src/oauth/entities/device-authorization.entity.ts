import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { User } from '../../users/user.entity';
import { Client } from './client.entity';

/** A device authorization request (RFC 8628), named by the hash of its device code. */
@Entity('device_authorizations')
@Index('idx_device_authorizations_expires', ['expiresAt'])
export class DeviceAuthorization {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  /** The hash of the code the person types: unique while the request is stored. */
  @Column({ type: 'varchar', length: 64, unique: true })
  userCodeHash: string;

  @Column({ type: 'varchar', length: 255 })
  @ForeignKey(() => Client, { onDelete: 'CASCADE' })
  clientId: string;

  @Column({ type: 'text' })
  scope: string;

  /** The resources (RFC 8707) it named, space-separated; null: none. */
  @Column({ type: 'text', nullable: true })
  resources: string | null;

  /** `pending`, `approved`, `denied` or `used`. */
  @Column({ type: 'varchar', length: 16 })
  status: string;

  @Column({ type: 'integer' })
  intervalSeconds: number;

  /** The earliest next poll the device may make. */
  @EpochMsColumn()
  nextPollAt: number;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  /** Once approved: the person, and the grant the approval started. */
  @Column({ type: 'varchar', length: 36, nullable: true })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string | null;

  @Column({ type: 'varchar', length: 36, nullable: true })
  grantId: string | null;
}
