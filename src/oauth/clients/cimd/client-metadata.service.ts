import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { AuditContext } from '../../../audit/audit-events';
import { AuditService } from '../../../audit/audit.service';
import { CachedFailure, RemoteCache } from '../../../safe-fetch/remote-cache';
import { SafeFetchError, SafeFetcher } from '../../../safe-fetch/safe-fetcher';
import { hashSecret } from '../../../crypto/secrets';
import { ClientsRepository } from '../clients.repository';
import { ClientsService } from '../clients.service';
import type { Client } from '../../entities/client.entity';
import { type ClientMetadata, InvalidMetadataDocumentError, clientMetadataOf } from './client-metadata-document';
import { ClientMetadataConfig } from './client-metadata.config';

/** A client ID URL whose document cannot be used; the message says why (shown on the error page). */
export class ClientMetadataError extends CachedFailure {
  override name = 'ClientMetadataError';
}

/** How many URL clients' written documents an instance remembers (an older one is just written again). */
const MAX_WRITTEN = 10_000;

/**
 * Clients identified by the URL of their own metadata document (draft-ietf-oauth-client-id-metadata-document, what
 * MCP clients use instead of registering): the document is fetched with {@link SafeFetcher} under the operator's
 * host policy, checked, and mirrored in a `clients` row (so that codes, grants, consents and revocation work as for
 * any client), each instance reusing a document as its `Cache-Control` allows within the configured floor and
 * ceiling, and a failure for a few seconds. Such a client is public (or authenticates with its own keys), never
 * trusted, and its redirect URIs are whatever its document says.
 */
@Injectable()
export class ClientMetadataDocuments {
  private readonly cache: RemoteCache<Readonly<Client>, undefined>;
  /** Per URL client, a SHA-256 of the document this instance last made sure its row holds (a bounded memo). */
  private readonly written = new LRUCache<string, string>({ max: MAX_WRITTEN });

  constructor(
    readonly config: ClientMetadataConfig,
    private readonly fetcher: SafeFetcher,
    private readonly clients: ClientsService,
    private readonly rows: ClientsRepository,
    private readonly audit: AuditService,
  ) {
    this.cache = new RemoteCache((url) => this.load(url));
  }

  /**
   * The client a client ID URL stands for, from this instance's cache or fetched now; throws
   * {@link ClientMetadataError} when its document cannot be had or used. Nothing is written: anyone can name any
   * URL at /authorize, so the row waits for {@link persist}, when a signed-in person allows the client.
   */
  async client(url: string): Promise<Readonly<Client>> {
    return this.cache.get(url, undefined);
  }

  private async load(url: string): Promise<{ value: Readonly<Client>; ttlMs: number }> {
    const { cacheMinSeconds, cacheMaxSeconds, failureCacheSeconds } = this.config;
    const failure = (message: string) => new ClientMetadataError(message, failureCacheSeconds * 1000);
    let metadata: ClientMetadata;
    let seconds: number;
    try {
      const fetched = await this.fetcher.json(url, this.config);
      metadata = clientMetadataOf(url, fetched.body);
      seconds = fetched.noStore ? cacheMinSeconds : Math.min(Math.max(fetched.maxAge ?? cacheMinSeconds, cacheMinSeconds), cacheMaxSeconds);
    } catch (error) {
      // Too many fetches at once on this instance says nothing about this document: not remembered against it.
      if (error instanceof SafeFetchError && error.reason === 'busy') throw new ClientMetadataError(error.message, 0);
      if (error instanceof SafeFetchError || error instanceof InvalidMetadataDocumentError) throw failure(error.message);
      throw error;
    }
    return { value: Object.freeze(clientOf(metadata)), ttlMs: seconds * 1000 };
  }

  /**
   * Writes a URL client's row (so that codes, grants, consent and revocation can name it) when it is new or its
   * document changed, with a `client.created` / `client.updated` event: when a person allows the client, not when
   * anyone names it (an anonymous flood of URLs at /authorize writes nothing). Once per document per instance.
   */
  async persist(client: Readonly<Client>, context: AuditContext): Promise<void> {
    const document = client.metadataDocument;
    if (document === null) return;
    const digest = hashSecret(document);
    if (this.written.get(client.id) === digest) return;
    const now = Date.now();
    const params = {
      id: client.id,
      name: client.name,
      redirectUris: client.redirectUris,
      scope: client.scope,
      isPublic: client.isPublic,
      grantTypes: client.grantTypes,
      tokenEndpointAuthMethod: client.tokenEndpointAuthMethod,
      jwks: client.jwks,
      jwksUri: client.jwksUri,
      tokenEndpointAuthSigningAlg: client.tokenEndpointAuthSigningAlg,
      trusted: false,
      createdAt: now,
      metadataDocument: document,
    };
    const details = { via: 'client ID metadata document', host: new URL(client.id).host };
    const created = AuditService.event({ type: 'client.created', actor: 'system', clientId: client.id, details }, context, now);
    const updated = AuditService.event({ type: 'client.updated', actor: 'system', clientId: client.id, details }, context, now);
    const { inserted, changed } = await this.rows.mirrorDocument(params, created, updated);
    if (inserted) this.audit.log(created);
    if (changed) {
      this.audit.log(updated);
      this.clients.forget(client.id);
    }
    this.written.set(client.id, digest);
  }
}

/** A URL client as its document describes it (public unless it signs with its keys; never trusted). */
function clientOf(metadata: ClientMetadata): Client {
  const document = JSON.stringify({
    client_id: metadata.clientId,
    client_name: metadata.name,
    redirect_uris: metadata.redirectUris,
    scope: metadata.scope,
    grant_types: metadata.grantTypes,
    token_endpoint_auth_method: metadata.tokenEndpointAuthMethod,
    ...(metadata.jwks ? { jwks: metadata.jwks } : {}),
    ...(metadata.jwksUri ? { jwks_uri: metadata.jwksUri } : {}),
    ...(metadata.signingAlg ? { token_endpoint_auth_signing_alg: metadata.signingAlg } : {}),
  });
  return {
    id: metadata.clientId,
    secretHash: null,
    name: metadata.name,
    redirectUris: metadata.redirectUris,
    scope: metadata.scope,
    isPublic: metadata.tokenEndpointAuthMethod === 'none',
    grantTypes: metadata.grantTypes,
    refreshGraceSeconds: 0,
    resources: [],
    postLogoutRedirectUris: [],
    registrationTokenHash: null,
    tokenEndpointAuthMethod: metadata.tokenEndpointAuthMethod === 'none' ? null : metadata.tokenEndpointAuthMethod,
    jwks: metadata.jwks ?? null,
    jwksUri: metadata.jwksUri ?? null,
    tokenEndpointAuthSigningAlg: metadata.signingAlg ?? null,
    trusted: false,
    minimumAcr: null,
    requirePushedRequests: false,
    dpopBoundAccessTokens: false,
    createdAt: Date.now(),
    metadataDocument: document,
  };
}
