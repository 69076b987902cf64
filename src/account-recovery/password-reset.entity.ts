import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { User } from '../users/user.entity';

/** A password reset sent by e-mail: the link holds the secret, the table its SHA-256. Used once, within its time. */
@Entity('password_resets')
@Index('idx_password_resets_user', ['userId'])
@Index('idx_password_resets_expires', ['expiresAt'])
export class PasswordReset {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tokenHash: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  /** When the link set a password (once only); null before. */
  @EpochMsColumn({ nullable: true })
  usedAt: number | null;
}
