import { Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../database/transformers';

/**
 * A DPoP proof already used (RFC 9449 11.1), kept until it is too old to be accepted anyway. The key leads with that
 * time, so inserts land near the end of one B-tree and the retention job deletes from its start.
 */
@Entity('dpop_proofs')
export class DpopProof {
  @PrimaryColumn({ type: 'bigint', transformer: bigintNumber })
  expiresAt: number;

  /** SHA-256 of the proof key's thumbprint and the proof's `jti`. */
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;
}
