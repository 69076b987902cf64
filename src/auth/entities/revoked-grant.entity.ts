import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

@Entity('revoked_grants')
export class RevokedGrant {
  @PrimaryColumn({ name: 'grant_id', type: 'varchar', length: 36 })
  grantId: string;

  @Column({ name: 'revoked_at', type: 'bigint', transformer: bigintNumber })
  revokedAt: number;

  @Column({ name: 'expires_at', type: 'bigint', transformer: bigintNumber })
  expiresAt: number;
}
