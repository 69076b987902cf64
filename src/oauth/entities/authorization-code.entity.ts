import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';

@Entity('authorization_codes')
export class AuthorizationCode {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  codeHash: string;

  @Column({ type: 'varchar', length: 36 })
  grantId: string;

  @Column({ type: 'varchar', length: 255 })
  clientId: string;

  @Column({ type: 'varchar', length: 36 })
  userId: string;

  /** The redirect_uri sent to /authorize, or null when it was left out. */
  @Column({ type: 'text', nullable: true })
  redirectUri: string | null;

  @Column({ type: 'text' })
  scope: string;

  @Column({ type: 'varchar', length: 128, nullable: true })
  codeChallenge: string | null;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  expiresAt: number;

  @EpochMsColumn({ nullable: true })
  consumedAt: number | null;

  /** The authorization request's `nonce` (OpenID Connect), repeated in the ID token of this code only. */
  @Column({ type: 'text', nullable: true })
  nonce: string | null;
}
