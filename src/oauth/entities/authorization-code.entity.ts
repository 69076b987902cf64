import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { Grant } from './grant.entity';

/**
 * A code issued by /authorize, as its hash. A redeemed code stays with its grant, so that a replay is recognised
 * (and revokes the grant); the retention job deletes the expired ones never redeemed by the partial index.
 */
@Entity('authorization_codes')
@Index('idx_codes_grant', ['grantId'])
@Index('idx_codes_unredeemed_expires', ['expiresAt'], { where: '"consumed_at" IS NULL' })
export class AuthorizationCode {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  codeHash: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => Grant, { onDelete: 'CASCADE' })
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

  /** RFC 9449 10: the code is redeemed only with a DPoP proof of this key (its thumbprint); null: not bound. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  dpopJkt: string | null;

  /** Until when presenting this redeemed code again gets tokens once: the redemption's answer was lost (a 503); 0 once it has. */
  @EpochMsColumn({ nullable: true })
  retryUntil: number | null;
}
