import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

@Entity('refresh_tokens')
export class RefreshToken {
  @PrimaryColumn({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash: string;

  @Column({ name: 'grant_id', type: 'varchar', length: 36 })
  grantId: string;

  @Column({ name: 'client_id', type: 'varchar', length: 64 })
  clientId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ type: 'varchar', length: 200 })
  scope: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: bigintNumber })
  createdAt: number;

  @Column({ name: 'expires_at', type: 'bigint', transformer: bigintNumber })
  expiresAt: number;

  /** Set when the token was exchanged for a new one; presenting it again is reuse. */
  @Column({ name: 'rotated_at', type: 'bigint', nullable: true, transformer: bigintNumber })
  rotatedAt: number | null;
}
