import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { type AuditBy, BY_SYSTEM } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import type { Page } from '../../common/pagination';
import { AuthConfig } from '../../auth/auth.config';
import { defaultClientScope } from '../../auth/scopes';
import { hashSecret, randomSecret } from '../../crypto/secrets';
import { AppConfig } from '../../config/app-config';
import type { Client } from '../entities/client.entity';
import { OAuthConfig } from '../oauth.config';
import { isClientIdUrl } from './cimd/client-id-url';
import { ClientMetadataConfig } from './cimd/client-metadata.config';
import {
  type ClientView,
  type CreateClientInput,
  InvalidClientInputError,
  type UpdateClientInput,
  changedScope,
  checkedGrace,
  checkedMinimumAcr,
  checkedGrantTypes,
  checkedName,
  checkedPostLogoutRedirectUris,
  checkedRedirectUris,
  checkedResources,
  checkedScope,
  isClientId,
  isRegisteredClientId,
  redirectUrisFor,
} from './client-metadata';
import { ClientsRepository } from './clients.repository';
import { changedKeys, keySettingsFor } from './client-keys';
import { clientView } from './client-view';
import { isLoopbackRedirectUri } from './redirect-uris';

/**
 * Clients are read on every /authorize and /token request and change rarely (the CLI, the admin API), so each
 * instance keeps the ones it has seen for REVOCATION_SYNC_SECONDS: a change made elsewhere applies within the time a
 * revocation takes, one made through this instance at once. Unknown ids are never cached (random ids cannot fill it).
 */
const CLIENT_CACHE_MAX = 1_000;

@Injectable()
export class ClientsService {
  private readonly cache: LRUCache<string, Readonly<Client>>;

  constructor(
    private readonly clients: ClientsRepository,
    private readonly audit: AuditService,
    private readonly metadataDocuments: ClientMetadataConfig,
    appConfig: AppConfig,
    oauthConfig: OAuthConfig,
    authConfig: AuthConfig,
  ) {
    this.cache = new LRUCache({ max: CLIENT_CACHE_MAX, ttl: authConfig.revocationSyncSeconds * 1000 });
    this.plainHttpRefused = appConfig.production && !oauthConfig.allowHttpRedirectUris;
  }

  /** RFC 9700 2.1: in production, no plain-http redirect URI but on a loopback address (ALLOW_HTTP_REDIRECT_URIS lifts it). */
  private readonly plainHttpRefused: boolean;

  /** `uris` (checked already), unless one is plain http on another host than loopback where that is refused. */
  private transportChecked(uris: string[], option = '--redirect-uri'): string[] {
    const plain = this.plainHttpRefused ? uris.find((uri) => new URL(uri).protocol === 'http:' && !isLoopbackRedirectUri(uri)) : undefined;
    if (plain !== undefined) {
      throw new InvalidClientInputError(
        `${option} "${plain}" must be https when NODE_ENV=production (plain http only on a loopback address; ALLOW_HTTP_REDIRECT_URIS=1 allows it)`,
      );
    }
    return uris;
  }

  async create(input: CreateClientInput, by: AuditBy = BY_SYSTEM): Promise<ClientView> {
    const name = checkedName(input.name, '--name');
    const grantTypes = checkedGrantTypes(input.grantTypes, Boolean(input.isPublic));
    const redirectUris = this.transportChecked(redirectUrisFor(grantTypes, input.redirectUris));
    // A service acting as itself gets exactly the scopes named for it, never "every scope" by default.
    if (grantTypes.includes('client_credentials') && input.scope === undefined) {
      throw new InvalidClientInputError('--scope is required with --grant client_credentials (the scopes the service may use as itself)');
    }
    const scope = checkedScope(input.scope ?? defaultClientScope());
    if (input.trusted && input.registrationTokenHash) throw new InvalidClientInputError('a registered client is never trusted');
    if (input.trusted && !grantTypes.includes('authorization_code')) {
      throw new InvalidClientInputError('--trusted only skips the consent page, which needs --grant authorization_code');
    }
    const keys = keySettingsFor(input);
    // A private_key_jwt client proves itself with its key: it has no secret that could leak.
    const secret = input.isPublic || input.tokenEndpointAuthMethod === 'private_key_jwt' ? undefined : randomSecret(32);
    const client = this.clients.build({
      id: randomSecret(16),
      secretHash: secret ? hashSecret(secret) : null,
      name,
      redirectUris,
      scope,
      grantTypes,
      refreshGraceSeconds: checkedGrace(input.refreshGraceSeconds, grantTypes),
      resources: checkedResources(input.resources),
      postLogoutRedirectUris: this.transportChecked(
        checkedPostLogoutRedirectUris(input.postLogoutRedirectUris),
        '--post-logout-redirect-uri',
      ),
      isPublic: Boolean(input.isPublic),
      trusted: Boolean(input.trusted),
      registrationTokenHash: input.registrationTokenHash ?? null,
      tokenEndpointAuthMethod: input.isPublic ? null : (input.tokenEndpointAuthMethod ?? null),
      minimumAcr: checkedMinimumAcr(input.minimumAcr),
      requirePushedRequests: Boolean(input.requirePushedRequests),
      dpopBoundAccessTokens: Boolean(input.dpopBoundAccessTokens),
      ...keys,
      createdAt: Date.now(),
    });
    const details = { name, grant_types: grantTypes.join(' ') };
    await this.audit.recorded({ type: 'client.created', clientId: client.id, details }, by, [this.clients.insertOf(client)]);
    return { ...clientView(client), ...(secret ? { client_secret: secret } : {}) };
  }

  /**
   * Changes what a registered client may do: its allowed scopes, redirect URIs, post-logout redirect URIs and/or
   * (private_key_jwt) its keys (each list replaces the old one). Grants already given keep their scopes; new authorization requests are checked against these (but for
   * a client that registered itself, whose scope is only its default: see AuthorizationRequestValidator).
   */
  async update(clientId: string, changes: UpdateClientInput, by: AuditBy = BY_SYSTEM): Promise<ClientView> {
    // A scope added or removed is computed from the scope read: when another change came in between, read again
    // (each failed turn means another change succeeded, so this ends).
    for (;;) {
      const updated = await this.updateFromStored(clientId, changes, by);
      if (updated) return updated;
    }
  }

  /** One turn of {@link update}; `undefined` when a relative scope change found the scope changed since it was read. */
  private async updateFromStored(clientId: string, changes: UpdateClientInput, by: AuditBy): Promise<ClientView | undefined> {
    // The stored row, not this instance's cached copy (another instance may have changed it a moment ago).
    const found = isRegisteredClientId(clientId) ? await this.clients.findById(clientId) : null;
    if (!found || found.metadataDocument !== null) throw new InvalidClientInputError(`no client with id "${clientId}"`);
    const client = { ...found };
    const keysChanged =
      changes.tokenEndpointAuthMethod !== undefined ||
      changes.jwks !== undefined ||
      changes.jwksUri !== undefined ||
      changes.tokenEndpointAuthSigningAlg !== undefined;
    const scopeChanged = changes.scope !== undefined || changes.addScope !== undefined || changes.removeScope !== undefined;
    if (!scopeChanged && changes.redirectUris === undefined && changes.postLogoutRedirectUris === undefined && !keysChanged) {
      throw new InvalidClientInputError(
        'give --scope, --add-scope, --remove-scope, --redirect-uri, --post-logout-redirect-uri and/or --jwks-file or --jwks-uri (private_key_jwt) to change',
      );
    }
    if (changes.scope !== undefined && (changes.addScope !== undefined || changes.removeScope !== undefined)) {
      throw new InvalidClientInputError('--scope replaces the scopes: give it, or --add-scope / --remove-scope, not both');
    }
    if (changes.scope !== undefined) client.scope = checkedScope(changes.scope);
    if (changes.addScope !== undefined || changes.removeScope !== undefined) client.scope = changedScope(found.scope, changes);
    if (changes.redirectUris !== undefined) client.redirectUris = this.transportChecked(checkedRedirectUris(changes.redirectUris));
    if (changes.postLogoutRedirectUris !== undefined) {
      client.postLogoutRedirectUris = this.transportChecked(
        checkedPostLogoutRedirectUris(changes.postLogoutRedirectUris),
        '--post-logout-redirect-uri',
      );
    }
    const details = {
      changed: Object.keys(changes)
        .filter((key) => changes[key as keyof UpdateClientInput] !== undefined)
        .join(' '),
    };
    // Only the columns asked for: a concurrent change of another one stays.
    const set: Partial<Client> = {};
    if (scopeChanged) set.scope = client.scope;
    if (changes.redirectUris !== undefined) set.redirectUris = client.redirectUris;
    if (changes.postLogoutRedirectUris !== undefined) set.postLogoutRedirectUris = client.postLogoutRedirectUris;
    if (keysChanged) {
      const keys = changedKeys(found, changes);
      Object.assign(set, keys);
      Object.assign(client, keys);
    }
    const event = { type: 'client.updated', clientId: client.id, details } as const;
    if (changes.addScope !== undefined || changes.removeScope !== undefined) {
      if (!(await this.audit.recordedIfChanged(event, by, this.clients.updateOf(client.id, set, found.scope)))) return undefined;
    } else {
      await this.audit.recorded(event, by, [this.clients.updateOf(client.id, set)]);
    }
    this.cache.delete(client.id);
    return clientView(client);
  }

  /**
   * Replaces what a dynamically registered client registered (RFC 7592 2.2): its name, redirect URIs, scopes,
   * grants, post-logout redirect URIs and (private_key_jwt) keys, checked as at creation. Whether it is public does not change.
   */
  async replaceRegistration(
    clientId: string,
    input: Pick<
      CreateClientInput,
      | 'name'
      | 'redirectUris'
      | 'scope'
      | 'grantTypes'
      | 'postLogoutRedirectUris'
      | 'jwks'
      | 'jwksUri'
      | 'tokenEndpointAuthSigningAlg'
      | 'requirePushedRequests'
      | 'dpopBoundAccessTokens'
    >,
    by: AuditBy,
  ): Promise<Client> {
    const found = await this.find(clientId);
    if (!found) throw new InvalidClientInputError(`no client with id "${clientId}"`);
    const name = checkedName(input.name, 'client_name');
    const grantTypes = checkedGrantTypes(input.grantTypes, found.isPublic);
    const changes = {
      name,
      grantTypes,
      redirectUris: this.transportChecked(redirectUrisFor(grantTypes, input.redirectUris)),
      scope: checkedScope(input.scope ?? defaultClientScope()),
      refreshGraceSeconds: grantTypes.includes('refresh_token') ? found.refreshGraceSeconds : 0,
      postLogoutRedirectUris: this.transportChecked(
        checkedPostLogoutRedirectUris(input.postLogoutRedirectUris),
        '--post-logout-redirect-uri',
      ),
      // A private_key_jwt client registers its keys anew with the rest (RFC 7592 2.2: the request replaces all).
      ...(found.tokenEndpointAuthMethod === 'private_key_jwt'
        ? keySettingsFor({ ...input, tokenEndpointAuthMethod: 'private_key_jwt', isPublic: false, redirectUris: [] })
        : keySettingsFor({ ...input, redirectUris: [] })),
      requirePushedRequests: Boolean(input.requirePushedRequests),
      dpopBoundAccessTokens: Boolean(input.dpopBoundAccessTokens),
    };
    const details = { changed: 'registration' };
    await this.audit.recorded({ type: 'client.updated', clientId, details }, by, [this.clients.updateOf(clientId, changes)]);
    this.cache.delete(clientId);
    return { ...found, ...changes };
  }

  /**
   * A page of the registered clients, oldest first (ties by id), as the admin API shows them (not the rows that
   * mirror clients' metadata documents: nobody registered those).
   */
  async list(limit: number, offset: number): Promise<Page<ClientView>> {
    const [rows, total] = await this.clients.pageOfRegistered(limit, offset);
    return { data: rows.map((client) => clientView(client)), page: { limit, offset, total } };
  }

  /** A new secret for a confidential client, shown once; the old one stops working at once on this instance. */
  async rotateSecret(clientId: string, by: AuditBy = BY_SYSTEM): Promise<ClientView> {
    const client = await this.findRegistered(clientId);
    if (!client) throw new InvalidClientInputError(`no client with id "${clientId}"`);
    if (client.isPublic) throw new InvalidClientInputError('a public client has no secret');
    if (client.tokenEndpointAuthMethod === 'private_key_jwt') throw new InvalidClientInputError('a private_key_jwt client has no secret');
    const secret = randomSecret(32);
    await this.audit.recorded({ type: 'client.secret_rotated', clientId }, by, [
      this.clients.updateOf(clientId, { secretHash: hashSecret(secret) }),
    ]);
    this.cache.delete(clientId);
    return { ...clientView(client), client_secret: secret };
  }

  /** Deletes a client with its grants, codes, refresh tokens and consents (the caller revokes its access tokens). */
  async remove(clientId: string, by: AuditBy = BY_SYSTEM): Promise<void> {
    await this.audit.recorded({ type: 'client.deleted', clientId }, by, [this.clients.deletionOf(clientId)]);
    this.cache.delete(clientId);
  }

  /**
   * A client registered by an operator or by itself (RFC 7591), never one identified by its metadata document's
   * URL: what the operator's tools act on.
   */
  async findRegistered(clientId: string): Promise<Readonly<Client> | undefined> {
    if (!isRegisteredClientId(clientId)) return undefined;
    const client = await this.find(clientId);
    return client?.metadataDocument === null ? client : undefined;
  }

  /** Drops this instance's cached copy of a client (its row changed). */
  forget(clientId: string): void {
    this.cache.delete(clientId);
  }

  /**
   * The client, from this instance's short-lived cache when it has it. Callers must not change it. A client ID URL
   * finds the row mirroring its metadata document (while such documents are on); /authorize goes through
   * `ClientMetadataDocuments` instead, which fetches the document.
   */
  async find(clientId: string): Promise<Readonly<Client> | undefined> {
    if (!isClientId(clientId)) return undefined;
    if (isClientIdUrl(clientId) && !(this.metadataDocuments.enabled && this.metadataDocuments.admits(new URL(clientId).hostname))) {
      return undefined;
    }
    const cached = this.cache.get(clientId);
    if (cached) return cached;
    const client = await this.clients.findById(clientId);
    this.cache.delete(clientId);
    if (!client) return undefined;
    this.cache.set(clientId, Object.freeze(client));
    return client;
  }
}
