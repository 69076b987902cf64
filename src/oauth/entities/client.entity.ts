import type { Acr } from '../../auth/acr';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, FlagColumn } from '../../database/columns';
import type { JwkSet } from '../client-auth/client-jwks';

/** RFC 8693 token exchange: a client trades an access token of this server for another one (delegation). */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** The `grant_type` values of the token endpoint. */
/** RFC 8628: the device authorization grant's type at the token endpoint. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', TOKEN_EXCHANGE_GRANT, DEVICE_CODE_GRANT] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

@Entity('clients')
export class Client {
  /** Random for a registered client; for a client ID metadata document, its https URL. */
  @PrimaryColumn({ type: 'varchar', length: 255 })
  id: string;

  /** SHA-256 of the secret; null for public clients. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  secretHash: string | null;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({
    type: 'text',
    transformer: { to: (v: string[]) => JSON.stringify(v), from: (v: string) => JSON.parse(v) as string[] },
  })
  redirectUris: string[];

  /** The scopes this client may request, space-separated. */
  @Column({ type: 'text' })
  scope: string;

  @Column({ type: 'boolean' })
  isPublic: boolean;

  /**
   * The grants this client may use at the token endpoint (`authorization_code` and `refresh_token` for people
   * signing in, `client_credentials` for a service acting as itself, {@link TOKEN_EXCHANGE_GRANT} for one acting for
   * the person of a token it holds).
   */
  @Column({
    type: 'text',
    default: 'authorization_code refresh_token',
    transformer: { to: (v: GrantType[]) => v.join(' '), from: (v: string) => v.split(' ').filter(Boolean) as GrantType[] },
  })
  grantTypes: GrantType[];

  /**
   * Seconds after a rotation in which presenting the rotated refresh token again returns the same successor
   * instead of revoking the grant (for clients that lose a response to a network failure); 0: off.
   */
  @Column({ type: 'integer', default: 0 })
  refreshGraceSeconds: number;

  /**
   * The resources (RFC 8707 `resource` values) besides this service's API (`AUDIENCE`, always allowed) that the
   * client may ask tokens for.
   */
  @Column({
    type: 'text',
    default: '',
    transformer: { to: (v: string[]) => v.join(' '), from: (v: string) => v.split(' ').filter(Boolean) },
  })
  resources: string[];

  /**
   * Where the browser may be sent after an RP-initiated logout (OpenID Connect `post_logout_redirect_uri`, compared
   * by exact string match); none: the logout ends on this server's page.
   */
  @Column({
    type: 'text',
    default: '',
    transformer: { to: (v: string[] | undefined) => (v ?? []).join(' '), from: (v: string) => v.split(' ').filter(Boolean) },
  })
  postLogoutRedirectUris: string[];

  /** Registered dynamically (RFC 7591): the hash of its registration access token (RFC 7592); else null. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  registrationTokenHash: string | null;

  /**
   * The one client authentication method it registered (RFC 7591 `token_endpoint_auth_method`:
   * `client_secret_basic`, `client_secret_post` or `private_key_jwt`); null: a confidential client may use either
   * secret method.
   */
  @Column({ type: 'varchar', length: 32, nullable: true })
  tokenEndpointAuthMethod: string | null;

  /** `private_key_jwt`: its public keys as a JWK Set (checked: public members only); null when it has none inline. */
  @Column({
    type: 'text',
    nullable: true,
    transformer: {
      to: (v: JwkSet | null | undefined) => (v ? JSON.stringify(v) : null),
      from: (v: string | null) => (v ? (JSON.parse(v) as JwkSet) : null),
    },
  })
  jwks: JwkSet | null;

  /** `private_key_jwt`: the https URL of its JWK Set, when its keys are not inline. */
  @Column({ type: 'text', nullable: true })
  jwksUri: string | null;

  /** `private_key_jwt`: the one algorithm its assertions may use (RFC 7591 `token_endpoint_auth_signing_alg`); null: any supported. */
  @Column({ type: 'varchar', length: 16, nullable: true })
  tokenEndpointAuthSigningAlg: string | null;

  /** First-party: no consent screen. */
  @Column({ type: 'boolean' })
  trusted: boolean;

  @EpochMsColumn()
  createdAt: number;

  /**
   * A client whose id is the URL of its client ID metadata document: the document (JSON) it was last seen with,
   * which the row mirrors so that grants, consents and revocation work as for other clients. Null for every
   * registered client. Such a client is never trusted, and its row is never read as its registration: /authorize
   * uses the document as fetched.
   */
  @Column({ type: 'text', nullable: true })
  metadataDocument: string | null;

  /** The sign-in level every person it signs in must reach (see auth/acr.ts); null: what its requests ask for. */
  @Column({ type: 'varchar', length: 8, nullable: true, default: null })
  minimumAcr: Acr | null;

  /** RFC 9126: its authorization requests must be pushed (`/par`) and sent to /authorize as a `request_uri`. */
  @FlagColumn({ default: false })
  requirePushedRequests: boolean;

  /** RFC 9449 5.2 `dpop_bound_access_tokens`: every token request carries a DPoP proof, so its tokens are bound to a key. */
  @FlagColumn({ default: false })
  dpopBoundAccessTokens: boolean;
}
