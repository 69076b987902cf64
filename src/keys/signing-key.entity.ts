import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import type { KeyState } from './key-lifecycle';

/** An RS256 signing key and its lifecycle (see `key-lifecycle.ts`); times are epoch ms. */
@Entity('signing_keys')
export class SigningKey {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  kid: string;

  @Column({ type: 'text' })
  privateJwk: string;

  @Column({ type: 'text' })
  publicJwk: string;

  /** When it was made, and published. */
  @EpochMsColumn()
  createdAt: number;

  /** When it signs from. */
  @EpochMsColumn({ default: 0 })
  activatesAt: number;

  /** When it stops signing (its successor's activation); null while no successor is planned. */
  @EpochMsColumn({ nullable: true })
  retiresAt: number | null;

  /** When it leaves the JWKS and its tokens are refused; null while it has no retirement. */
  @EpochMsColumn({ nullable: true })
  unpublishesAt: number | null;

  /** The lifecycle state last recorded by the rotation check. */
  @Column({ type: 'varchar', length: 16, default: 'active' })
  state: KeyState;
}
