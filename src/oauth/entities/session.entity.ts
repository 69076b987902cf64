import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { User } from '../../users/user.entity';

/** A login session; the cookie holds the secret, the table its SHA-256. */
@Entity('sessions')
@Index('idx_sessions_user', ['userId'])
@Index('idx_sessions_expires', ['expiresAt'])
export class Session {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string;

  @Column({ type: 'varchar', length: 64 })
  csrfToken: string;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  /**
   * When the user logged in (OpenID Connect `auth_time`); a re-authentication in the session moves it. NULL only in
   * a row an instance older than the column wrote (read as the session's start).
   */
  @EpochMsColumn({ nullable: true })
  authTime: number | null;

  /** The session's id in ID tokens (`sid`): random, unlike `id`, which is the hash of the cookie and never shown. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  sid: string | null;

  /** How the person signed in: RFC 8176 `amr` values, space-separated (`pwd`, `pwd otp mfa`); null before they were kept. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  amr: string | null;
}
