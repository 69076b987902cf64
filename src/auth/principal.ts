/** The caller of a protected route, as the verified access token describes it. */
export interface AuthPrincipal {
  /** The user id (`sub`). */
  sub: string;
  clientId: string;
  scope: string;
  scopes: ReadonlySet<string>;
  grantId: string;
  jti: string;
  /** Issued at, seconds since the epoch. */
  iat: number;
  /** Expiry, seconds since the epoch. */
  exp: number;
}
