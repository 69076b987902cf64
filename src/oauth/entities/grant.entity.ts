import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { User } from '../../users/user.entity';
import { Client } from './client.entity';

/** One authorization: a code and the chain of refresh tokens rotated from it. Access tokens carry its id. */
@Entity('grants')
@Index('idx_grants_user', ['userId'])
@Index('idx_grants_client', ['clientId'])
@Index('idx_grants_expires', ['expiresAt'])
export class Grant {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string;

  @Column({ type: 'varchar', length: 255 })
  @ForeignKey(() => Client, { onDelete: 'CASCADE' })
  clientId: string;

  @Column({ type: 'text' })
  scope: string;

  /** The resources (RFC 8707) the authorization request named, space-separated; null: none (the API itself). */
  @Column({ type: 'text', nullable: true })
  resources: string | null;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  @EpochMsColumn({ nullable: true })
  revokedAt: number | null;

  /** The login of the session the grant was issued in (ID tokens' `auth_time`, kept on refresh); null before OpenID Connect. */
  @EpochMsColumn({ nullable: true })
  authTime: number | null;

  /** That session's `sid`; null before OpenID Connect. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  sid: string | null;

  /** That session's `amr` at the time (how the person signed in), for the ID tokens' `amr`; null when not known. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  amr: string | null;
}
