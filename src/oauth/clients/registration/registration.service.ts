import type { AuditContext } from '../../../audit/audit-events';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { ClientsService } from '../clients.service';
import { InvalidClientInputError } from '../client-metadata';
import type { Client, GrantType } from '../../entities/client.entity';
import { GrantRevocationService } from '../../grants/grant-revocation.service';
import type { JwkSet } from '../../client-auth/client-jwks';
import { RegistrationConfig } from './registration.config';
import { type AuthMethod, RegistrationError, authMethodOf, metadataError, registrationMetadata } from './registration-metadata';
import { hashSecret, randomSecret, safeEqual } from '../../../crypto/secrets';

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
  require_pushed_authorization_requests?: true;
  dpop_bound_access_tokens?: true;
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
    const metadata = registrationMetadata(body, 'client_secret_basic');
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
          requirePushedRequests: metadata.requirePushedRequests,
          dpopBoundAccessTokens: metadata.dpopBoundAccessTokens,
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
    const metadata = registrationMetadata(body, method);
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
          requirePushedRequests: metadata.requirePushedRequests,
          dpopBoundAccessTokens: metadata.dpopBoundAccessTokens,
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
      ...(client.requirePushedRequests ? { require_pushed_authorization_requests: true as const } : {}),
      ...(client.dpopBoundAccessTokens ? { dpop_bound_access_tokens: true as const } : {}),
    };
  }
}
