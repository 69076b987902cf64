import { allScopes, isScope } from '../../auth/scopes';
import { ACR_VALUES, type Acr } from '../../auth/acr';
import { CONTROL_CHARACTER, UNPAIRED_SURROGATE } from '../../common/text';
import type { JwkSet } from '../client-auth/client-jwks';
import { type Client, DEVICE_CODE_GRANT, GRANT_TYPES, type GrantType, TOKEN_EXCHANGE_GRANT } from '../entities/client.entity';
import { isClientIdUrl } from './cimd/client-id-url';
/** The rules a client's metadata follows, whoever states it: the command line, the admin API, registration (RFC 7591) and metadata documents. */
export interface CreateClientInput {
  name: string;
  redirectUris: string[];
  isPublic?: boolean;
  trusted?: boolean;
  scope?: string;
  /** The grants it may use; the authorization-code grant with refresh tokens when omitted. */
  grantTypes?: string[];
  /** Refresh rotation grace in seconds (0, the default: off). */
  refreshGraceSeconds?: number;
  /** RFC 8707 resources besides the API (always allowed) that it may ask tokens for. */
  resources?: string[];
  /** Dynamic registration: the hash of the registration access token (such a client is never trusted). */
  registrationTokenHash?: string;
  /** A confidential client's one authentication method; either secret method when omitted. */
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
  /** `private_key_jwt`: its public keys (a JWK Set), or the https URL of them (`jwksUri`); exactly one of the two. */
  jwks?: unknown;
  jwksUri?: unknown;
  /** `private_key_jwt`: the one algorithm its assertions may use; any supported when omitted. */
  tokenEndpointAuthSigningAlg?: unknown;
  /** OpenID Connect RP-initiated logout: where the browser may go after signing out (none when omitted). */
  postLogoutRedirectUris?: string[];
  /** The sign-in level every person it signs in must reach (`aal1`, `aal2`, `phr`); none when omitted. */
  minimumAcr?: string;
  /** RFC 9126: its authorization requests must be pushed to /par. */
  requirePushedRequests?: boolean;
  /** RFC 9449 5.2: every token request carries a DPoP proof (its access tokens are bound to a key). */
  dpopBoundAccessTokens?: boolean;
}

/** The authentication methods a confidential client may be registered for. */
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
export const TOKEN_ENDPOINT_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
];

export interface ClientView {
  client_id: string;
  client_secret?: string;
  name: string;
  redirect_uris: string[];
  scope: string;
  grant_types: GrantType[];
  refresh_grace_seconds: number;
  resources: string[];
  post_logout_redirect_uris: string[];
  public: boolean;
  trusted: boolean;
  /** Only when it has one: the sign-in level every person it signs in must reach. */
  minimum_acr?: Acr;
  /** Only when set: its authorization requests must be pushed (RFC 9126). */
  require_pushed_authorization_requests?: true;
  /** Only when set: its access tokens must be bound to a key (RFC 9449). */
  dpop_bound_access_tokens?: true;
  /** Only for a `private_key_jwt` client: the method, its keys (or their URL) and its one algorithm, if it has one. */
  token_endpoint_auth_method?: 'private_key_jwt';
  jwks?: JwkSet;
  jwks_uri?: string;
  token_endpoint_auth_signing_alg?: string;
}

export interface UpdateClientInput {
  /** Space-separated; replaces the allowed scopes. */
  scope?: string;
  /** Space-separated scopes added to the allowed ones (not with `scope`). */
  addScope?: string;
  /** Space-separated scopes taken from the allowed ones (not with `scope`); at least one must stay. */
  removeScope?: string;
  /** Replaces the registered redirect URIs. */
  redirectUris?: string[];
  /** Replaces the registered post-logout redirect URIs (an empty list removes them). */
  postLogoutRedirectUris?: string[];
  /**
   * `private_key_jwt` (a confidential client with a secret becomes one: its secret stops working) or the
   * client's current method; with `jwks` or `jwksUri`, which replace the client's keys.
   */
  tokenEndpointAuthMethod?: 'private_key_jwt';
  jwks?: unknown;
  jwksUri?: unknown;
  tokenEndpointAuthSigningAlg?: unknown;
}

export class InvalidClientInputError extends Error {
  override name = 'InvalidClientInputError';
}

export function checkedRedirectUris(uris: string[], option = '--redirect-uri'): string[] {
  if (!uris.length && option === '--redirect-uri') throw new InvalidClientInputError('at least one --redirect-uri is required');
  for (const uri of uris) {
    let parsed: URL;
    try {
      parsed = new URL(uri);
    } catch {
      throw new InvalidClientInputError(`${option} "${uri}" is not an absolute URL`);
    }
    if (parsed.hash || uri.includes('#')) throw new InvalidClientInputError(`${option} "${uri}" must not have a fragment`);
    if (!/^[a-z][a-z0-9+.-]*:$/.test(parsed.protocol)) throw new InvalidClientInputError(`${option} "${uri}" has no valid scheme`);
    // Stored space-separated, and no browser address holds a space.
    if (/\s/.test(uri)) throw new InvalidClientInputError(`${option} "${uri}" must not contain spaces`);
  }
  return [...new Set(uris)];
}

/** Post-logout redirect URIs: absolute, no fragment, like redirect URIs; a client may have none. */
export function checkedPostLogoutRedirectUris(uris: string[] | undefined): string[] {
  return checkedRedirectUris(uris ?? [], '--post-logout-redirect-uri');
}

/** A client's name: 1 to 100 characters once trimmed (`field` names it in the message). */
export function checkedName(name: string | undefined, field: string): string {
  const trimmed = name?.trim();
  if (!trimmed || trimmed.length > 100) throw new InvalidClientInputError(`${field} must be 1 to 100 characters`);
  return trimmed;
}

/** Whether a name a client states for itself (registration, metadata document) is one line of 1 to 100 characters. */
export function isSelfStatedClientName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    Boolean(name.trim()) &&
    name.length <= 100 &&
    !CONTROL_CHARACTER.test(name) &&
    !UNPAIRED_SURROGATE.test(name)
  );
}

/** The redirect URIs of a client with `grantTypes`: required for the code grant; a client that only acts as itself may have none. */
export function redirectUrisFor(grantTypes: GrantType[], uris: string[]): string[] {
  return grantTypes.includes('authorization_code') || uris.length ? checkedRedirectUris(uris) : [];
}

const DEFAULT_GRANT_TYPES: GrantType[] = ['authorization_code', 'refresh_token'];

/** The grants a new client may use, checked against what it is (public or confidential). */
export function checkedGrantTypes(values: string[] | undefined, isPublic: boolean): GrantType[] {
  if (!values?.length) return DEFAULT_GRANT_TYPES;
  const unknown = values.filter((v) => !(GRANT_TYPES as readonly string[]).includes(v));
  if (unknown.length) throw new InvalidClientInputError(`--grant must be one of: ${GRANT_TYPES.join(', ')} (not ${unknown.join(', ')})`);
  const grants = GRANT_TYPES.filter((g) => values.includes(g));
  if (grants.includes('refresh_token') && !grants.includes('authorization_code') && !grants.includes(DEVICE_CODE_GRANT)) {
    throw new InvalidClientInputError(
      `--grant refresh_token needs --grant authorization_code or ${DEVICE_CODE_GRANT} (refresh tokens come from them)`,
    );
  }
  // A public client cannot keep a secret, so it cannot authenticate as itself (RFC 6749 4.4).
  if (isPublic && grants.includes('client_credentials')) {
    throw new InvalidClientInputError('--grant client_credentials is for confidential clients only (not with --public)');
  }
  // Trading a person's token for another is delegation: only a client that proves who it is may do it (RFC 8693 5).
  if (isPublic && grants.includes(TOKEN_EXCHANGE_GRANT)) {
    throw new InvalidClientInputError(`--grant ${TOKEN_EXCHANGE_GRANT} is for confidential clients only (not with --public)`);
  }
  return grants;
}

/** The longest rotation grace a client may have: enough to retry a lost response, short enough to stay a detector. */
export const MAX_REFRESH_GRACE_SECONDS = 60;

export function checkedGrace(value: number | undefined, grantTypes: GrantType[]): number {
  if (value === undefined || value === 0) return 0;
  if (!Number.isInteger(value) || value < 0 || value > MAX_REFRESH_GRACE_SECONDS) {
    throw new InvalidClientInputError(`--refresh-grace must be a whole number of seconds from 0 to ${MAX_REFRESH_GRACE_SECONDS}`);
  }
  if (!grantTypes.includes('refresh_token')) throw new InvalidClientInputError('--refresh-grace needs the refresh_token grant');
  return value;
}

/** Absolute URIs without a fragment (RFC 8707 2), without repeats. */
export function checkedResources(values: string[] | undefined): string[] {
  for (const value of values ?? []) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(value);
    } catch {
      parsed = undefined;
    }
    if (!parsed || value.includes('#') || /\s/.test(value)) {
      throw new InvalidClientInputError(`--resource "${value}" must be an absolute URI without a fragment`);
    }
  }
  return [...new Set(values ?? [])];
}

/** A space-separated subset of the defined scopes, without repeats. */
export function checkedScope(scope: string): string {
  const scopes = scope.split(' ').filter(Boolean);
  if (scopes.length === 0 || scopes.some((s) => !isScope(s))) {
    throw new InvalidClientInputError(`--scope must be a subset of: ${allScopes().join(' ')}`);
  }
  return [...new Set(scopes)].join(' ');
}

/** A client's scopes with `addScope` added and `removeScope` taken away (each space-separated, each a known scope). */
export function changedScope(current: string, { addScope, removeScope }: Pick<UpdateClientInput, 'addScope' | 'removeScope'>): string {
  const listed = (value: string | undefined, option: string) => {
    if (value === undefined) return [];
    const scopes = value.split(' ').filter(Boolean);
    if (scopes.length === 0 || scopes.some((s) => !isScope(s))) {
      throw new InvalidClientInputError(`${option} must name scopes among: ${allScopes().join(' ')}`);
    }
    return scopes;
  };
  const removed = new Set(listed(removeScope, '--remove-scope'));
  const scopes = [...new Set([...current.split(' ').filter(Boolean), ...listed(addScope, '--add-scope')])].filter((s) => !removed.has(s));
  if (scopes.length === 0) throw new InvalidClientInputError('--remove-scope would leave the client no scope');
  return scopes.join(' ');
}

/**
 * Whether a value could be the id of a registered client (at most 64 characters, no control characters): anything
 * else is refused before a query (which also keeps NUL, which PostgreSQL rejects, away from it).
 */
export function isRegisteredClientId(value: string): boolean {
  return value.length > 0 && value.length <= 64 && !CONTROL_CHARACTER.test(value);
}

/**
 * The scopes a client may ask for: an operator's client, those the operator gave it; a client known by its metadata
 * document, those the document names; a client that registered itself (RFC 7591), every scope, since registration
 * would have given it any: its registered `scope` is what a request without `scope` gets, not a ceiling (an agent
 * steps up after a scope challenge; the person is always asked, such a client never being trusted).
 */
export function askableScopes(client: Pick<Client, 'scope' | 'registrationTokenHash'>): ReadonlySet<string> {
  return new Set(client.registrationTokenHash !== null ? allScopes() : client.scope.split(' '));
}

/**
 * Whether a value could be a client id at the protocol endpoints and on the person's own pages: a registered
 * client's, or a client ID URL (the URL of the client's metadata document). The operator's tools (admin API,
 * command line) take registered ids only.
 */
export function isClientId(value: string): boolean {
  return isRegisteredClientId(value) || isClientIdUrl(value);
}

/**
 * Whether the client chose its redirect URIs itself (it registered itself, RFC 7591, or is identified by its
 * metadata document's URL): they are anyone's choice, so an error before the person has seen a page is shown to
 * them rather than redirected there, and no consent is taken for granted.
 */
export function choseOwnRedirectUris(client: Pick<Client, 'registrationTokenHash' | 'metadataDocument'>): boolean {
  return client.registrationTokenHash !== null || client.metadataDocument !== null;
}

/** A client's minimum sign-in level as given (`--minimum-acr`, `minimum_acr`): one of ACR_VALUES, or none. */
export function checkedMinimumAcr(value: string | undefined): Acr | null {
  if (value === undefined) return null;
  if (!(ACR_VALUES as readonly string[]).includes(value)) {
    throw new InvalidClientInputError(`--minimum-acr must be one of ${ACR_VALUES.join(', ')}, got "${value}"`);
  }
  return value as Acr;
}
