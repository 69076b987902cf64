/**
 * The claim that marks a token a client obtained for itself, with no user (`gty`, as several servers name it):
 * the resource server tells such a caller from a user by this claim, never by comparing identifiers.
 */
export const CLIENT_CREDENTIALS_CLAIM = { gty: 'client_credentials' } as const;

/**
 * RFC 8693 4.1: who acts for the token's subject (a token from a token exchange), and, nested, who acted before
 * them. `client_id` is the client of the actor's own token (the exchanging client when it named no actor).
 */
export interface ActClaim {
  sub: string;
  client_id?: string;
  act?: ActClaim;
}

/** The caller of a protected route, as the verified access token describes it. */
export interface AuthPrincipal {
  /**
   * `user`: a person signed in and the client acts for them (`sub` is the user id); `client`: a client obtained the
   * token for itself with the client-credentials grant (`sub` is the client id). Only routes declaring
   * `clientTokens: true` let a `client` caller in.
   */
  kind: 'user' | 'client';
  /** The user id, or the client id for a `client` caller. */
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
  /** The resources it is for (RFC 8707): this API's `AUDIENCE` among them wherever the guard let it in. */
  aud: string | string[];
  /** Set on a token from a token exchange (RFC 8693): the actor, and the chain of earlier ones. */
  act?: ActClaim;
  /**
   * Set on a token from a token exchange (claim `gcid`): the client of the grant it was exchanged from, whose
   * deletion ends it as it ends that client's own tokens.
   */
  grantClientId?: string;
  /** The level of the person's sign-in (`acr`, see acr.ts), when the token says. */
  acr?: string;
  /** When the person signed in (`auth_time`, seconds since the epoch; RFC 9470 4), when the token says. */
  authTime?: number;
  /** RFC 9449 6.1: the thumbprint of the key the token is bound to (`cnf.jkt`); such a token needs a DPoP proof. */
  jkt?: string;
}
