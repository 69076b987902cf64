import { defaultClientScope, isScope } from '../../../auth/scopes';
import type { GrantType } from '../../entities/client.entity';
import { isSelfStatedClientName } from '../client-metadata';
import { selfAssertedRedirectUriProblem } from '../redirect-uris';
import {
  type AssertionSigningAlg,
  InvalidJwksError,
  type JwkSet,
  checkedJwks,
  checkedJwksUri,
  checkedSigningAlg,
} from '../../client-auth/client-jwks';

/** A document that is not a usable client ID metadata document; the message says which rule it broke. */
export class InvalidMetadataDocumentError extends Error {
  override name = 'InvalidMetadataDocumentError';
}

/** What this server takes from a client ID metadata document. */
export interface ClientMetadata {
  clientId: string;
  name: string;
  redirectUris: string[];
  /** The scopes it may ask for: those the document names that this server knows, or all when it names none. */
  scope: string;
  grantTypes: GrantType[];
  /** `none` (a public client, PKCE) or `private_key_jwt` (authenticates with a key of `jwks` / `jwks_uri`). */
  tokenEndpointAuthMethod: 'none' | 'private_key_jwt';
  jwks?: JwkSet;
  jwksUri?: string;
  /** `private_key_jwt`: the one algorithm its assertions may use, when the document names one. */
  signingAlg?: AssertionSigningAlg;
}

const GRANTS: readonly GrantType[] = ['authorization_code', 'refresh_token'];
const SHARED_SECRET_METHODS = new Set(['client_secret_basic', 'client_secret_post', 'client_secret_jwt']);
const MAX_REDIRECT_URIS = 20;

function fail(message: string): never {
  throw new InvalidMetadataDocumentError(message);
}

function stringList(fields: Record<string, unknown>, name: string): string[] | undefined {
  const value = fields[name];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) fail(`${name} must be an array of strings`);
  return value as string[];
}

/**
 * Checks a fetched document against the draft's rules and this server's: a JSON object whose `client_id` is exactly
 * the URL it came from, with a one-line `client_name` and `redirect_uris` (https, or http on a loopback address);
 * no `client_secret` and no shared-secret authentication method; only the authorization-code and refresh-token
 * grants. Unknown fields are ignored (RFC 7591 2).
 */
export function clientMetadataOf(url: string, body: unknown): ClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) fail('the document is not a JSON object');
  const fields = body as Record<string, unknown>;
  if (fields.client_id !== url) fail('client_id of the document is not the URL it was fetched from');
  if (fields.client_secret !== undefined || fields.client_secret_expires_at !== undefined) {
    fail('a client ID metadata document must not hold a client_secret');
  }

  const name = fields.client_name;
  if (!isSelfStatedClientName(name)) {
    fail('client_name must be one line of 1 to 100 characters');
  }

  const redirectUris = stringList(fields, 'redirect_uris') ?? [];
  if (redirectUris.length === 0) fail('redirect_uris is required');
  if (redirectUris.length > MAX_REDIRECT_URIS) fail(`redirect_uris may hold at most ${MAX_REDIRECT_URIS} URIs`);
  for (const uri of redirectUris) {
    const problem = selfAssertedRedirectUriProblem(uri);
    if (problem) fail(problem);
  }

  const method = fields.token_endpoint_auth_method ?? 'none';
  if (typeof method !== 'string') fail('token_endpoint_auth_method must be a string');
  if (SHARED_SECRET_METHODS.has(method)) fail(`token_endpoint_auth_method ${method} needs a shared secret, which a document cannot have`);
  if (method !== 'none' && method !== 'private_key_jwt') fail('token_endpoint_auth_method must be none or private_key_jwt');

  if (fields.jwks !== undefined && fields.jwks_uri !== undefined) fail('jwks and jwks_uri must not both be given');
  if (method === 'private_key_jwt' && fields.jwks === undefined && fields.jwks_uri === undefined) {
    fail('private_key_jwt needs jwks or jwks_uri');
  }
  // The keys a private_key_jwt client signs with, under the rules of registered clients' keys (public members only).
  let keys: Pick<ClientMetadata, 'jwks' | 'jwksUri' | 'signingAlg'> = {};
  if (method === 'private_key_jwt') {
    try {
      keys = {
        ...(fields.jwks !== undefined ? { jwks: checkedJwks(fields.jwks) } : { jwksUri: checkedJwksUri(fields.jwks_uri) }),
        ...(fields.token_endpoint_auth_signing_alg !== undefined
          ? { signingAlg: checkedSigningAlg(fields.token_endpoint_auth_signing_alg) }
          : {}),
      };
    } catch (error) {
      if (error instanceof InvalidJwksError) fail(error.message);
      throw error;
    }
  }

  const grants = stringList(fields, 'grant_types') ?? [...GRANTS];
  if (grants.some((g) => !(GRANTS as readonly string[]).includes(g))) fail(`grant_types must be among: ${GRANTS.join(', ')}`);
  if (!grants.includes('authorization_code')) fail('grant_types must include authorization_code');
  const responseTypes = stringList(fields, 'response_types');
  if (responseTypes !== undefined && responseTypes.some((r) => r !== 'code')) fail('response_types may only hold code');

  let scope = defaultClientScope();
  if (fields.scope !== undefined) {
    if (typeof fields.scope !== 'string') fail('scope must be a space-separated string');
    const known = [...new Set(fields.scope.split(' ').filter((s) => isScope(s)))];
    if (known.length === 0) fail('scope names no scope of this server');
    scope = known.join(' ');
  }

  return {
    clientId: url,
    name: name.trim(),
    redirectUris: [...new Set(redirectUris)],
    scope,
    grantTypes: GRANTS.filter((g) => grants.includes(g)),
    tokenEndpointAuthMethod: method,
    ...keys,
  };
}
