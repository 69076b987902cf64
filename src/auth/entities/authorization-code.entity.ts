import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

@Entity('authorization_codes')
export class AuthorizationCode {
  @PrimaryColumn({ name: 'code_hash', type: 'varchar', length: 64 })
  codeHash: string;

  @Column({ name: 'grant_id', type: 'varchar', length: 36 })
  grantId: string;

  @Column({ name: 'client_id', type: 'varchar', length: 64 })
  clientId: string;

  @Column({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  /** The redirect_uri sent to /authorize, or null when it was left out. */
  @Column({ name: 'redirect_uri', type: 'text', nullable: true })
  redirectUri: string | null;

  @Column({ type: 'varchar', length: 200 })
  scope: string;

  @Column({ name: 'code_challenge', type: 'varchar', length: 128, nullable: true })
  codeChallenge: string | null;

  @Column({ name: 'created_at', type: 'bigint', transformer: bigintNumber })
  createdAt: number;

  @Column({ name: 'expires_at', type: 'bigint', transformer: bigintNumber })
  expiresAt: number;

  @Column({ name: 'consumed_at', type: 'bigint', nullable: true, transformer: bigintNumber })
  consumedAt: number | null;
}
