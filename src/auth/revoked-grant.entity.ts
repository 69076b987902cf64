import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/**
 * A revoked grant, or a whole subject (`client:<client id>`, `user:<user id>`): every instance refuses the access
 * tokens it covers, read in `change_seq` order by the revoked list's sync.
 */
@Entity('revoked_grants')
@Index('idx_revoked_grants_expires', ['expiresAt'])
@Index('idx_revoked_grants_change_seq', ['changeSeq', 'revokedAt', 'grantId', 'expiresAt'])
export class RevokedGrant {
  @PrimaryColumn({ type: 'varchar', length: 300 })
  grantId: string;

  @EpochMsColumn()
  revokedAt: number;

  /** After this instant no access token of the grant can still be valid, so the row may be pruned. */
  @EpochMsColumn()
  expiresAt: number;

  /**
   * Orders the writes as they committed, for the sync's cursor (set by the repository's upsert): on PostgreSQL the
   * writing transaction's id, on SQLite one more than the highest.
   */
  @Column({ type: 'bigint', default: 0 })
  changeSeq: string;
}
