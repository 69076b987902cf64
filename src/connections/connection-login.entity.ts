import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { Connection } from './connection.entity';

/**
 * A sign-in sent to a connection and not back yet: found by the SHA-256 of its `state` (which the browser's cookie
 * holds too), with the `nonce` and the sealed PKCE verifier the callback checks; used once, for ten minutes.
 */
@Entity('connection_logins')
@Index('idx_connection_logins_expires', ['expiresAt'])
export class ConnectionLogin {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  stateHash: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => Connection, { onDelete: 'CASCADE' })
  connectionId: string;

  @Column({ type: 'varchar', length: 64 })
  nonce: string;

  /** The PKCE code verifier, sealed (SecretSealing). */
  @Column({ type: 'text' })
  codeVerifier: string;

  /** Where the person goes once signed in (a relative path on this server). */
  @Column({ type: 'text' })
  returnTo: string;

  @EpochMsColumn()
  expiresAt: number;
}
