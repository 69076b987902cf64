import { Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

@Entity('revoked_grants')
export class RevokedGrant {
  @PrimaryColumn({ type: 'varchar', length: 300 })
  grantId: string;

  @EpochMsColumn()
  revokedAt: number;

  @EpochMsColumn()
  expiresAt: number;
}
