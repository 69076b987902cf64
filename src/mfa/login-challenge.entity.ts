import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { User } from '../users/user.entity';

/** A sign-in waiting for its second factor, named by the hash of its cookie. */
@Entity('login_challenges')
@Index('idx_login_challenges_user', ['userId'])
@Index('idx_login_challenges_expires', ['expiresAt'])
export class LoginChallenge {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { name: 'fk_login_challenges_user', onDelete: 'CASCADE' })
  userId: string;

  @Column({ type: 'text' })
  returnTo: string;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  @Column({ type: 'integer', default: 0 })
  tries: number;

  /** A step-up of a live session: that session's `amr` (space-separated); null for a sign-in from the password. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  priorAmr: string | null;

  /** A sign-in that sets up an authenticator: its secret, sealed, so that no other sign-in shows it. */
  @Column({ type: 'text', nullable: true })
  totpSecret: string | null;
}
