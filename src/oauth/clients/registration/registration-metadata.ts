import { allScopes, defaultClientScope, isScope } from '../../../auth/scopes';
import { type Client, GRANT_TYPES, type GrantType } from '../../entities/client.entity';
import { isSelfStatedClientName } from '../client-metadata';
import { selfAssertedRedirectUriProblem } from '../redirect-uris';

/** RFC 7591 3.2.2 / RFC 7592 errors, answered as `{ error, error_description }`. */
export class RegistrationError extends Error {
  override name = 'RegistrationError';

  constructor(
    readonly status: 400 | 401 | 403,
    readonly error: 'invalid_redirect_uri' | 'invalid_client_metadata' | 'invalid_token' | 'access_denied',
    description: string,
  ) {
    super(description);
  }
}

export const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** What a registration request asks for, checked (RFC 7591 2); other fields are ignored (RFC 7591 3.1). */
export interface ClientMetadata {
  name: string;
  redirectUris: string[];
  grantTypes: GrantType[];
  authMethod: AuthMethod;
  scope: string;
  /** OpenID Connect RP-Initiated Logout 1.0, section 3.1 (none: the logout ends on this server's page). */
  postLogoutRedirectUris: string[];
  /** `private_key_jwt`: as sent, checked by the clients service (exactly one of `jwks` and `jwks_uri`). */
  jwks?: unknown;
  jwksUri?: unknown;
  signingAlg?: unknown;
  /** RFC 9126 6: its authorization requests must be pushed. */
  requirePushedRequests: boolean;
  /** RFC 9449 5.2: its access tokens must be bound to a key. */
  dpopBoundAccessTokens: boolean;
}

export function metadataError(description: string): RegistrationError {
  return new RegistrationError(400, 'invalid_client_metadata', description);
}

/**
 * A redirect URI a dynamically registered client may have (the rule every self-stated one follows, see
 * `selfAssertedRedirectUriProblem`); the same rule for where it sends people after a logout.
 */
function checkedRedirectUri(value: string): string {
  const problem = selfAssertedRedirectUriProblem(value);
  if (problem) throw new RegistrationError(400, 'invalid_redirect_uri', `${problem[0].toUpperCase()}${problem.slice(1)}.`);
  return value;
}

function stringList(body: Record<string, unknown>, name: string): string[] | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw metadataError(`${name} must be an array of strings.`);
  return value as string[];
}

/** The metadata of a registration request (RFC 7591 2), checked; other fields are ignored (RFC 7591 3.1). */
export function registrationMetadata(body: unknown, defaultAuthMethod: AuthMethod): ClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw metadataError('The body must be a JSON object.');
  const fields = body as Record<string, unknown>;

  const method = fields.token_endpoint_auth_method ?? defaultAuthMethod;
  if (!(AUTH_METHODS as readonly unknown[]).includes(method)) {
    throw metadataError(`token_endpoint_auth_method must be one of: ${AUTH_METHODS.join(', ')}.`);
  }
  const authMethod = method as AuthMethod;

  const grantTypes = stringList(fields, 'grant_types') ?? ['authorization_code', 'refresh_token'];
  const unknownGrant = grantTypes.find((g) => !(GRANT_TYPES as readonly string[]).includes(g));
  if (unknownGrant !== undefined) throw metadataError(`grant_types must be among: ${GRANT_TYPES.join(', ')}.`);
  // A client acting as itself reaches service routes (e.g. the user list) with its scopes alone: only an operator
  // (client:create, the admin API) decides that, never a registration request, with or without the initial token.
  if (grantTypes.includes('client_credentials')) {
    throw metadataError('client_credentials is given by an operator only (client:create or the admin API), not through registration.');
  }
  const responseTypes = stringList(fields, 'response_types');
  if (responseTypes !== undefined && responseTypes.some((r) => r !== 'code')) throw metadataError('response_types may only hold code.');
  if (responseTypes?.includes('code') && !grantTypes.includes('authorization_code')) {
    throw metadataError('response_types code needs the authorization_code grant.');
  }

  const redirectUris = (stringList(fields, 'redirect_uris') ?? []).map(checkedRedirectUri);
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    throw new RegistrationError(400, 'invalid_redirect_uri', 'redirect_uris is required for the authorization_code grant.');
  }

  const postLogoutRedirectUris = (stringList(fields, 'post_logout_redirect_uris') ?? []).map(checkedRedirectUri);

  const name = fields.client_name ?? 'Unnamed client';
  if (!isSelfStatedClientName(name)) {
    throw metadataError('client_name must be one line of 1 to 100 characters.');
  }

  const scopeValue = fields.scope ?? defaultClientScope();
  if (typeof scopeValue !== 'string') throw metadataError('scope must be a space-separated string.');
  const scopes = scopeValue.split(' ').filter(Boolean);
  if (scopes.length === 0 || scopes.some((s) => !isScope(s))) throw metadataError(`scope must be a subset of: ${allScopes().join(' ')}.`);

  // RFC 7591 2: jwks and jwks_uri are mutually exclusive; both only for private_key_jwt (the clients service checks).
  if (fields.jwks !== undefined && fields.jwks_uri !== undefined) throw metadataError('jwks and jwks_uri must not both be given.');
  const keys =
    authMethod === 'private_key_jwt'
      ? { jwks: fields.jwks, jwksUri: fields.jwks_uri, signingAlg: fields.token_endpoint_auth_signing_alg }
      : {};

  const flag = (field: string): boolean => {
    const value = fields[field] ?? false;
    if (typeof value !== 'boolean') throw metadataError(`${field} must be true or false.`);
    return value;
  };

  return {
    name: name.trim(),
    redirectUris,
    grantTypes: grantTypes as GrantType[],
    authMethod,
    scope: [...new Set(scopes)].join(' '),
    postLogoutRedirectUris,
    ...keys,
    requirePushedRequests: flag('require_pushed_authorization_requests'),
    dpopBoundAccessTokens: flag('dpop_bound_access_tokens'),
  };
}

/** How a stored client authenticates: `none` without a secret, else its registered method (basic, RFC 7591's default). */
export function authMethodOf(client: Client): AuthMethod {
  if (client.isPublic) return 'none';
  if (client.tokenEndpointAuthMethod === 'private_key_jwt') return 'private_key_jwt';
  return client.tokenEndpointAuthMethod === 'client_secret_post' ? 'client_secret_post' : 'client_secret_basic';
}
