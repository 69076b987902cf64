/** The auth-params of a Bearer challenge (RFC 6750 3), written in this order. */
export interface BearerChallengeParams {
  realm?: string;
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | 'insufficient_user_authentication';
  error_description?: string;
  /** Space-separated scopes (RFC 6750 3: the scope the request needs). */
  scope?: string;
  /** RFC 9470 3: the authentication levels the request needs, space-separated. */
  acr_values?: string;
  /** The protected-resource metadata URL (RFC 9728 5.1). */
  resource_metadata?: string;
}

const ORDER: (keyof BearerChallengeParams)[] = ['realm', 'error', 'error_description', 'scope', 'acr_values', 'resource_metadata'];

/** An auth-param value as a quoted-string (RFC 9110 11.2, 5.6.4): `"` and `\` escaped. */
export function quotedString(value: string): string {
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/**
 * The `WWW-Authenticate` value of a Bearer challenge of the resource API. Every challenge is built here: the guard
 * and the domain errors write theirs without `resource_metadata`, which the problem+json filter adds to each through
 * the challenge hook `AuthModule` provides ({@link withResourceMetadata}), so that a 401, a 400 and a 403 all name
 * the same metadata URL.
 */
export function bearerChallenge(params: BearerChallengeParams): string {
  return challengeOf('Bearer', ORDER, params);
}

/** A challenge of `scheme` with the auth-params of `params` present, in `order`, as quoted-strings. */
function challengeOf<P extends object>(scheme: string, order: (keyof P)[], params: P): string {
  const pairs = order.filter((name) => params[name] !== undefined).map((name) => `${String(name)}=${quotedString(String(params[name]))}`);
  return pairs.length ? `${scheme} ${pairs.join(', ')}` : scheme;
}

/**
 * A Bearer or DPoP challenge with the protected-resource metadata URL added last (RFC 9728 5.1); other schemes
 * (Basic) unchanged.
 */
export function withResourceMetadata(challenge: string, metadataUrl: string): string {
  if (challenge === 'Bearer') return bearerChallenge({ resource_metadata: metadataUrl });
  if (!challenge.startsWith('Bearer ') && !challenge.startsWith('DPoP ')) return challenge;
  return `${challenge}, resource_metadata=${quotedString(metadataUrl)}`;
}

/** The auth-params of a DPoP challenge (RFC 9449 7.1), written in this order. */
export interface DpopChallengeParams {
  error?: 'invalid_request' | 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce' | 'insufficient_scope';
  error_description?: string;
  scope?: string;
  /** The proof algorithms the resource accepts, space-separated. */
  algs: string;
}

/** The `WWW-Authenticate` value of a DPoP challenge of the resource API (RFC 9449 7.1). */
export function dpopChallenge(params: DpopChallengeParams): string {
  return challengeOf('DPoP', ['error', 'error_description', 'scope', 'algs'], params);
}

/** A Bearer challenge of the guard restated for a request that used the DPoP scheme, with the accepted algorithms. */
export function asDpopChallenge(bearer: string, algs: string): string {
  const params = bearer.startsWith('Bearer ') ? `${bearer.slice('Bearer '.length)}, ` : '';
  return `DPoP ${params}algs=${quotedString(algs)}`;
}
