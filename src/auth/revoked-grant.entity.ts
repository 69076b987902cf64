import { Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/**
 * A revoked grant, or a whole subject (`client:<client id>`, `user:<user id>`): every instance refuses the access
 * tokens it covers, read in `revoked_at` order by the revoked list's sync.
 */
@Entity('revoked_grants')
@Index('idx_revoked_grants_expires', ['expiresAt'])
@Index('idx_revoked_grants_revoked_at', ['revokedAt', 'grantId'])
export class RevokedGrant {
  @PrimaryColumn({ type: 'varchar', length: 300 })
  grantId: string;

  @EpochMsColumn()
  revokedAt: number;

  /** After this instant no access token of the grant can still be valid, so the row may be pruned. */
  @EpochMsColumn()
  expiresAt: number;
}
