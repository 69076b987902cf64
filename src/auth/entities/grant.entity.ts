import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

/** One authorization: a code and the chain of refresh tokens rotated from it. Access tokens carry its id. */
@Entity('grants')
export class Grant {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @Column({ name: 'client_id', type: 'varchar', length: 64 })
  clientId: string;

  @Column({ type: 'varchar', length: 200 })
  scope: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: bigintNumber })
  createdAt: number;

  @Column({ name: 'expires_at', type: 'bigint', transformer: bigintNumber })
  expiresAt: number;

  @Column({ name: 'revoked_at', type: 'bigint', nullable: true, transformer: bigintNumber })
  revokedAt: number | null;
}
