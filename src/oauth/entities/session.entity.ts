import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';

/** A login session; the cookie holds the secret, the table its SHA-256. */
@Entity('sessions')
export class Session {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 64 })
  csrfToken: string;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;
}
