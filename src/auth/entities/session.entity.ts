import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

/** A login session; the cookie holds the secret, the table its SHA-256. */
@Entity('sessions')
export class Session {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ name: 'csrf_token', type: 'varchar', length: 64 })
  csrfToken: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: bigintNumber })
  createdAt: number;

  @Column({ name: 'expires_at', type: 'bigint', transformer: bigintNumber })
  expiresAt: number;
}
