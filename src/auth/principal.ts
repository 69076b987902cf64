/** The caller of a protected route, as the verified access token describes it. */
export interface AuthPrincipal {
  /** The user id (`sub`). */
  sub: string;
  clientId: string;
  scope: string;
  scopes: ReadonlySet<string>;
  grantId: string;
  jti: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}
