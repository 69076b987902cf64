import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { Grant } from './grant.entity';

@Entity('refresh_tokens')
@Index('idx_refresh_grant', ['grantId'])
export class RefreshToken {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  tokenHash: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => Grant, { onDelete: 'CASCADE' })
  grantId: string;

  @Column({ type: 'varchar', length: 255 })
  clientId: string;

  @Column({ type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'text' })
  scope: string;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  /** Set when the token was exchanged for a new one; presenting it again is reuse. */
  @EpochMsColumn({ nullable: true })
  rotatedAt: number | null;

  /** Once rotated: the successor, sealed under this token's own secret (`sealFor` in secrets.ts), until it is handed out again. */
  @Column({ type: 'text', nullable: true })
  successorSealed: string | null;

  /** Until when presenting this rotated token again gets its successor: the rotation's answer was lost (a 503). */
  @EpochMsColumn({ nullable: true })
  retryUntil: number | null;

  /** RFC 9449: a public client's refresh token is usable only with a DPoP proof of this key (its thumbprint). */
  @Column({ type: 'varchar', length: 64, nullable: true })
  dpopJkt: string | null;
}
