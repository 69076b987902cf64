import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, FlagColumn } from '../database/columns';

export const CONNECTION_TYPES = ['oidc'] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];

/** A company identity provider people sign in through (an upstream OpenID Connect provider today). */
@Entity('connections')
export class Connection {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 16 })
  type: ConnectionType;

  /** The upstream's issuer identifier (discovery from its `/.well-known/openid-configuration`). */
  @Column({ type: 'varchar', length: 2048 })
  issuer: string;

  @Column({ type: 'varchar', length: 255 })
  clientId: string;

  /** The client secret, sealed under KEY_ENCRYPTION_KEY (SecretSealing); null for a public client. */
  @Column({ type: 'text', nullable: true })
  clientSecret: string | null;

  /** The e-mail domains it serves, lower-case, space-separated: the login form sends their people to it. */
  @Column({ type: 'text' })
  domains: string;

  /** Whether an upstream sign-in that says it used more than one factor (`amr` mfa) counts as this service's aal2. */
  @FlagColumn({ default: false })
  trustUpstreamMfa: boolean;

  /**
   * The upstream groups (its ID token's `groups` claim) whose people are administrators here, space-separated;
   * everyone else a connection signs in is a user. Null: the connection sets no role (people keep theirs).
   */
  @Column({ type: 'text', nullable: true })
  adminGroups: string | null;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  updatedAt: number;
}
