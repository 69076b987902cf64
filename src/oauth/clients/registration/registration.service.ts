import type { AuditContext } from '../../../audit/audit-events';
import { Injectable } from '@nestjs/common';
import { allScopes, defaultClientScope, isScope } from '../../../auth/scopes';
import { CONTROL_CHARACTER, UNPAIRED_SURROGATE } from '../../../common/text';
import { AppConfig } from '../../../config/app-config';
import { ClientsService, InvalidClientInputError } from '../clients.service';
import { type Client, GRANT_TYPES, type GrantType } from '../../entities/client.entity';
import { GrantRevocationService } from '../../grants/grant-revocation.service';
import type { JwkSet } from '../../client-auth/client-jwks';
import { RegistrationConfig } from './registration.config';
import { hashSecret, randomSecret, safeEqual } from '../../../common/crypto/secrets';

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

const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;
type AuthMethod = (typeof AUTH_METHODS)[number];

/** What a registration request asks for, checked (RFC 7591 2); other fields are ignored (RFC 7591 3.1). */
interface ClientMetadata {
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
}

/** The client information response (RFC 7591 3.2.1, RFC 7592 3). */
export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  client_id_issued_at: number;
  client_secret_expires_at?: number;
  registration_access_token: string;
  registration_client_uri: string;
  client_name: string;
  redirect_uris: string[];
  grant_types: GrantType[];
  response_types: string[];
  token_endpoint_auth_method: AuthMethod;
  scope: string;
  post_logout_redirect_uris: string[];
  jwks?: JwkSet;
  jwks_uri?: string;
  token_endpoint_auth_signing_alg?: string;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

function metadataError(description: string): RegistrationError {
  return new RegistrationError(400, 'invalid_client_metadata', description);
}

/**
 * A redirect URI a dynamically registered client may have: https, or http on a loopback address (RFC 8252 7.3);
 * the same rule for where it sends people after a logout.
 */
function checkedRedirectUri(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RegistrationError(400, 'invalid_redirect_uri', 'A redirect URI is not an absolute URI.');
  }
  if (value.includes('#')) throw new RegistrationError(400, 'invalid_redirect_uri', 'A redirect URI must not have a fragment.');
  const https = url.protocol === 'https:';
  const loopback = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (!https && !loopback) {
    throw new RegistrationError(400, 'invalid_redirect_uri', 'A redirect URI must be https, or http on a loopback address.');
  }
  if (url.username || url.password) throw new RegistrationError(400, 'invalid_redirect_uri', 'A redirect URI must not hold credentials.');
  return value;
}

function stringList(body: Record<string, unknown>, name: string): string[] | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw metadataError(`${name} must be an array of strings.`);
  return value as string[];
}

/**
 * Dynamic client registration (RFC 7591) and its management protocol (RFC 7592). Off unless `REGISTRATION` is
 * set; in `open` mode public clients (PKCE, no secret) with https or loopback redirect URIs register without a
 * token, and the initial access token admits confidential ones. A registered client is never trusted (the user
 * always sees the consent page) and gets a registration access token, stored as a hash, with which it reads,
 * replaces and deletes its registration.
 */
@Injectable()
export class RegistrationService {
  constructor(
    private readonly clients: ClientsService,
    private readonly config: RegistrationConfig,
    private readonly app: AppConfig,
    private readonly lifecycle: GrantRevocationService,
  ) {}

  get enabled(): boolean {
    return this.config.mode !== 'off';
  }

  /** RFC 7591 3: registers a client when `bearer` (the initial access token, if any) admits it. */
  async register(body: unknown, bearer: string | undefined, context: AuditContext): Promise<RegisteredClient> {
    const privileged = this.admitted(bearer);
    // RFC 7591 2: client_secret_basic when the request names no method, so an open registration must name none.
    const metadata = this.metadata(body, 'client_secret_basic');
    if (!privileged && metadata.authMethod !== 'none') {
      throw metadataError('Without an initial access token only public clients (token_endpoint_auth_method none) may register.');
    }
    const registrationToken = randomSecret(32);
    const view = await this.clientInput(() =>
      this.clients.create(
        {
          name: metadata.name,
          redirectUris: metadata.redirectUris,
          isPublic: metadata.authMethod === 'none',
          scope: metadata.scope,
          grantTypes: metadata.grantTypes,
          postLogoutRedirectUris: metadata.postLogoutRedirectUris,
          registrationTokenHash: hashSecret(registrationToken),
          tokenEndpointAuthMethod: metadata.authMethod === 'none' ? undefined : metadata.authMethod,
          jwks: metadata.jwks,
          jwksUri: metadata.jwksUri,
          tokenEndpointAuthSigningAlg: metadata.signingAlg,
        },
        { actor: 'anonymous', context },
      ),
    );
    const client = (await this.clients.find(view.client_id))!;
    return this.information(client, metadata.authMethod, registrationToken, view.client_secret);
  }

  /** RFC 7592 2.1. */
  async read(clientId: string, bearer: string | undefined): Promise<RegisteredClient> {
    const client = await this.registered(clientId, bearer);
    return this.information(client, authMethodOf(client), bearer!);
  }

  /** RFC 7592 2.2: the request holds the whole new registration; the client's kind and secret stay. */
  async replace(clientId: string, body: unknown, bearer: string | undefined, context: AuditContext): Promise<RegisteredClient> {
    const client = await this.registered(clientId, bearer);
    const fields = (body ?? {}) as Record<string, unknown>;
    if (fields.client_id !== clientId) throw metadataError('client_id must be given and be this client.');
    if (fields.client_secret !== undefined) {
      if (
        typeof fields.client_secret !== 'string' ||
        !client.secretHash ||
        !safeEqual(client.secretHash, hashSecret(fields.client_secret))
      ) {
        throw metadataError('client_secret does not match.');
      }
    }
    const method = authMethodOf(client);
    const metadata = this.metadata(body, method);
    if (metadata.authMethod !== method) throw metadataError('token_endpoint_auth_method cannot change.');
    const updated = await this.clientInput(() =>
      this.clients.replaceRegistration(
        clientId,
        {
          name: metadata.name,
          redirectUris: metadata.redirectUris,
          scope: metadata.scope,
          grantTypes: metadata.grantTypes,
          postLogoutRedirectUris: metadata.postLogoutRedirectUris,
          jwks: metadata.jwks,
          jwksUri: metadata.jwksUri,
          tokenEndpointAuthSigningAlg: metadata.signingAlg,
        },
        { actor: `client:${clientId}`, context },
      ),
    );
    return this.information(updated, metadata.authMethod, bearer!);
  }

  /** RFC 7592 2.3: the client and everything it was granted go; its access tokens stop within REVOCATION_SYNC_SECONDS. */
  async remove(clientId: string, bearer: string | undefined, context: AuditContext): Promise<void> {
    await this.registered(clientId, bearer);
    await this.lifecycle.revokeClientGrants(clientId);
    await this.clients.remove(clientId, { actor: `client:${clientId}`, context });
  }

  private admitted(bearer: string | undefined): boolean {
    const initial = this.config.initialToken;
    if (bearer !== undefined) {
      if (initial && safeEqual(hashSecret(bearer), hashSecret(initial))) return true;
      throw new RegistrationError(401, 'invalid_token', 'The initial access token is not valid.');
    }
    if (this.config.mode === 'open') return false;
    throw new RegistrationError(401, 'invalid_token', 'Registration needs an initial access token.');
  }

  /** The registered client a registration access token belongs to; one answer for every failure (RFC 7592 2). */
  private async registered(clientId: string, bearer: string | undefined): Promise<Client> {
    const client = bearer === undefined ? undefined : await this.clients.find(clientId);
    if (!client || !client.registrationTokenHash || !safeEqual(client.registrationTokenHash, hashSecret(bearer!))) {
      throw new RegistrationError(401, 'invalid_token', 'The registration access token is not valid for this client.');
    }
    return client;
  }

  private metadata(body: unknown, defaultAuthMethod: AuthMethod): ClientMetadata {
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
    if (typeof name !== 'string' || !name.trim() || name.length > 100 || CONTROL_CHARACTER.test(name) || UNPAIRED_SURROGATE.test(name)) {
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

    return {
      name: name.trim(),
      redirectUris,
      grantTypes: grantTypes as GrantType[],
      authMethod,
      scope: [...new Set(scopes)].join(' '),
      postLogoutRedirectUris,
      ...keys,
    };
  }

  /** Runs a change of the clients service, answering what it refuses as invalid metadata. */
  private async clientInput<T>(change: () => Promise<T>): Promise<T> {
    try {
      return await change();
    } catch (error) {
      if (error instanceof InvalidClientInputError) throw metadataError(error.message.replace(/--([a-z-]+)/g, '$1'));
      throw error;
    }
  }

  private information(client: Client, authMethod: AuthMethod, registrationToken: string, secret?: string): RegisteredClient {
    return {
      client_id: client.id,
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      client_id_issued_at: Math.floor(client.createdAt / 1000),
      registration_access_token: registrationToken,
      registration_client_uri: `${this.app.issuer}/register/${encodeURIComponent(client.id)}`,
      client_name: client.name,
      redirect_uris: client.redirectUris,
      grant_types: client.grantTypes,
      response_types: client.grantTypes.includes('authorization_code') ? ['code'] : [],
      token_endpoint_auth_method: authMethod,
      scope: client.scope,
      post_logout_redirect_uris: client.postLogoutRedirectUris,
      ...(client.jwks ? { jwks: client.jwks } : {}),
      ...(client.jwksUri ? { jwks_uri: client.jwksUri } : {}),
      ...(client.tokenEndpointAuthSigningAlg ? { token_endpoint_auth_signing_alg: client.tokenEndpointAuthSigningAlg } : {}),
    };
  }
}

/** How a stored client authenticates: `none` without a secret, else its registered method (basic, RFC 7591's default). */
function authMethodOf(client: Client): AuthMethod {
  if (client.isPublic) return 'none';
  if (client.tokenEndpointAuthMethod === 'private_key_jwt') return 'private_key_jwt';
  return client.tokenEndpointAuthMethod === 'client_secret_post' ? 'client_secret_post' : 'client_secret_basic';
}
