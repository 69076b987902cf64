import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/** A WebAuthn challenge handed to a browser, named by the hash of that browser's cookie; taken once. */
@Entity('webauthn_challenges')
@Index('idx_webauthn_challenges_expires', ['expiresAt'])
export class WebauthnChallenge {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ type: 'varchar', length: 128 })
  challenge: string;

  /** `register` (account page), `sign-in` (a passkey alone) or `second-factor` (after the password). */
  @Column({ type: 'varchar', length: 16 })
  purpose: string;

  /** The person it was handed to; null for a sign-in with a passkey alone. */
  @Column({ type: 'varchar', length: 36, nullable: true })
  userId: string | null;

  @EpochMsColumn()
  expiresAt: number;
}
