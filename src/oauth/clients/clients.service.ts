import { type AuditBy, type AuditContext, BY_SYSTEM } from '../../audit/audit-events';
import { LRUCache } from 'lru-cache';
import { AuditService } from '../../audit/audit.service';
import { Injectable } from '@nestjs/common';
import { parseBasicCredentials } from '../../common/basic-credentials';
import type { Page } from '../../common/pagination';
import { CONTROL_CHARACTER } from '../../common/text';
import { ClientsRepository } from './clients.repository';
import { type Client, GRANT_TYPES, type GrantType, TOKEN_EXCHANGE_GRANT } from '../entities/client.entity';
import { OAuthError } from '../oauth-error';
import { allScopes, defaultClientScope, isScope } from '../../auth/scopes';
import { hashSecret, randomSecret, safeEqual } from '../../common/crypto/secrets';
import { isClientIdUrl } from './cimd/client-id-url';
import { ClientMetadataConfig } from './cimd/client-metadata.config';
import { AppConfig } from '../../config/app-config';
import { OAuthConfig } from '../oauth.config';
import { isLoopbackRedirectUri } from './redirect-uris';
import { ClientAssertionVerifier, JWT_BEARER_ASSERTION_TYPE, assertionSubject } from '../client-auth/client-assertion';
import { InvalidJwksError, type JwkSet, checkedJwks, checkedJwksUri, checkedSigningAlg, keyFitsAlg } from '../client-auth/client-jwks';

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
  /** Only for a `private_key_jwt` client: the method, its keys (or their URL) and its one algorithm, if it has one. */
  token_endpoint_auth_method?: 'private_key_jwt';
  jwks?: JwkSet;
  jwks_uri?: string;
  token_endpoint_auth_signing_alg?: string;
}

/** What a token-endpoint request presents to authenticate its client. */
export interface ClientCredentials {
  /** The Authorization header, if any. */
  authorization?: string;
  clientId?: string;
  clientSecret?: string;
  /** RFC 7521 4.2 `client_assertion_type` and `client_assertion` (`private_key_jwt`). */
  clientAssertionType?: string;
  clientAssertion?: string;
  /** The path called (`/token`, `/revoke`, `/introspect`): an assertion's `aud` may name it. */
  endpoint?: string;
}

export interface UpdateClientInput {
  /** Space-separated; replaces the allowed scopes. */
  scope?: string;
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

const DUMMY_SECRET_HASH = hashSecret('no-such-client');

/**
 * Clients are read on every /authorize and /token request and change rarely (the CLI), so each instance keeps
 * the ones it has seen for a few seconds: a change made elsewhere applies within this time, one made through this
 * instance at once. Unknown ids are never cached (random ids cannot fill the cache).
 */
const CLIENT_CACHE_TTL_MS = 10_000;
const CLIENT_CACHE_MAX = 1_000;

function checkedRedirectUris(uris: string[], option = '--redirect-uri'): string[] {
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
function checkedPostLogoutRedirectUris(uris: string[] | undefined): string[] {
  return checkedRedirectUris(uris ?? [], '--post-logout-redirect-uri');
}

/** A client's name: 1 to 100 characters once trimmed (`field` names it in the message). */
function checkedName(name: string | undefined, field: string): string {
  const trimmed = name?.trim();
  if (!trimmed || trimmed.length > 100) throw new InvalidClientInputError(`${field} must be 1 to 100 characters`);
  return trimmed;
}

/** The redirect URIs of a client with `grantTypes`: required for the code grant; a client that only acts as itself may have none. */
function redirectUrisFor(grantTypes: GrantType[], uris: string[]): string[] {
  return grantTypes.includes('authorization_code') || uris.length ? checkedRedirectUris(uris) : [];
}

/** A `private_key_jwt` client's keys: `jwks` or `jwksUri` (one of them), and its algorithm if it names one. */
type KeySettings = Pick<Client, 'jwks' | 'jwksUri' | 'tokenEndpointAuthSigningAlg'>;

const NO_KEYS: KeySettings = { jwks: null, jwksUri: null, tokenEndpointAuthSigningAlg: null };

function checkedKeySettings(input: { jwks?: unknown; jwksUri?: unknown; tokenEndpointAuthSigningAlg?: unknown }): KeySettings {
  if ((input.jwks === undefined) === (input.jwksUri === undefined)) {
    throw new InvalidClientInputError('private_key_jwt needs the public keys as either jwks or jwks_uri (one of them)');
  }
  try {
    const settings = {
      jwks: input.jwks === undefined ? null : checkedJwks(input.jwks),
      jwksUri: input.jwksUri === undefined ? null : checkedJwksUri(input.jwksUri),
      tokenEndpointAuthSigningAlg:
        input.tokenEndpointAuthSigningAlg === undefined ? null : checkedSigningAlg(input.tokenEndpointAuthSigningAlg),
    };
    // A pinned algorithm that none of the inline keys can verify would leave the client unable to authenticate.
    const alg = settings.tokenEndpointAuthSigningAlg;
    if (alg && settings.jwks && !settings.jwks.keys.some((key) => keyFitsAlg(key, alg))) {
      throw new InvalidClientInputError(`token_endpoint_auth_signing_alg ${alg} fits none of the keys`);
    }
    return settings;
  } catch (error) {
    if (error instanceof InvalidJwksError) throw new InvalidClientInputError(error.message);
    throw error;
  }
}

/**
 * A client's new keys (`client:update`, the admin API): a `private_key_jwt` client's replaced, or a confidential
 * client with a secret made a `private_key_jwt` one (its secret hash goes: the secret stops working).
 */
function changedKeys(client: Client, changes: UpdateClientInput): Partial<Client> {
  if (client.isPublic) throw new InvalidClientInputError('a public client has no keys (jwks, jwks_uri)');
  if (changes.tokenEndpointAuthMethod !== undefined && changes.tokenEndpointAuthMethod !== 'private_key_jwt') {
    throw new InvalidClientInputError('--auth-method can only be changed to private_key_jwt');
  }
  const method = changes.tokenEndpointAuthMethod ?? client.tokenEndpointAuthMethod;
  if (method !== 'private_key_jwt') {
    throw new InvalidClientInputError('jwks and jwks_uri are for private_key_jwt clients: give --auth-method private_key_jwt with them');
  }
  // A private_key_jwt client named no new keys (only an algorithm): its keys stay.
  const keep = changes.jwks === undefined && changes.jwksUri === undefined && client.tokenEndpointAuthMethod === 'private_key_jwt';
  const keys = checkedKeySettings({
    jwks: keep ? (client.jwks ?? undefined) : changes.jwks,
    jwksUri: keep ? (client.jwksUri ?? undefined) : changes.jwksUri,
    // The algorithm stays unless a new one is named.
    tokenEndpointAuthSigningAlg: changes.tokenEndpointAuthSigningAlg ?? client.tokenEndpointAuthSigningAlg ?? undefined,
  });
  return { ...keys, tokenEndpointAuthMethod: 'private_key_jwt', secretHash: null };
}

/** The keys of a new client: only `private_key_jwt` has (and needs) them. */
function keySettingsFor(input: CreateClientInput): KeySettings {
  const method = input.tokenEndpointAuthMethod;
  if (method !== undefined && !TOKEN_ENDPOINT_AUTH_METHODS.includes(method)) {
    throw new InvalidClientInputError(`--auth-method must be one of: ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}`);
  }
  if (method === 'private_key_jwt') {
    if (input.isPublic) throw new InvalidClientInputError('a --public client has no authentication method (not private_key_jwt)');
    return checkedKeySettings(input);
  }
  if (input.jwks !== undefined || input.jwksUri !== undefined || input.tokenEndpointAuthSigningAlg !== undefined) {
    throw new InvalidClientInputError('jwks, jwks_uri and token_endpoint_auth_signing_alg are for private_key_jwt clients only');
  }
  return NO_KEYS;
}

const DEFAULT_GRANT_TYPES: GrantType[] = ['authorization_code', 'refresh_token'];

/** The grants a new client may use, checked against what it is (public or confidential). */
function checkedGrantTypes(values: string[] | undefined, isPublic: boolean): GrantType[] {
  if (!values?.length) return DEFAULT_GRANT_TYPES;
  const unknown = values.filter((v) => !(GRANT_TYPES as readonly string[]).includes(v));
  if (unknown.length) throw new InvalidClientInputError(`--grant must be one of: ${GRANT_TYPES.join(', ')} (not ${unknown.join(', ')})`);
  const grants = GRANT_TYPES.filter((g) => values.includes(g));
  if (grants.includes('refresh_token') && !grants.includes('authorization_code')) {
    throw new InvalidClientInputError('--grant refresh_token needs --grant authorization_code (refresh tokens come from it)');
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

function checkedGrace(value: number | undefined, grantTypes: GrantType[]): number {
  if (value === undefined || value === 0) return 0;
  if (!Number.isInteger(value) || value < 0 || value > MAX_REFRESH_GRACE_SECONDS) {
    throw new InvalidClientInputError(`--refresh-grace must be a whole number of seconds from 0 to ${MAX_REFRESH_GRACE_SECONDS}`);
  }
  if (!grantTypes.includes('refresh_token')) throw new InvalidClientInputError('--refresh-grace needs the refresh_token grant');
  return value;
}

/** Absolute URIs without a fragment (RFC 8707 2), without repeats. */
function checkedResources(values: string[] | undefined): string[] {
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
function checkedScope(scope: string): string {
  const scopes = scope.split(' ').filter(Boolean);
  if (scopes.length === 0 || scopes.some((s) => !isScope(s))) {
    throw new InvalidClientInputError(`--scope must be a subset of: ${allScopes().join(' ')}`);
  }
  return [...new Set(scopes)].join(' ');
}

/**
 * Whether a value could be the id of a registered client (at most 64 characters, no control characters): anything
 * else is refused before a query (which also keeps NUL, which PostgreSQL rejects, away from it).
 */
export function isRegisteredClientId(value: string): boolean {
  return value.length > 0 && value.length <= 64 && !CONTROL_CHARACTER.test(value);
}

/**
 * Whether a value could be a client id at the protocol endpoints and on the person's own pages: a registered
 * client's, or a client ID URL (the URL of the client's metadata document). The operator's tools (admin API,
 * command line) take registered ids only.
 */
/**
 * The scopes a client may ask for: an operator's client, those the operator gave it; a client known by its metadata
 * document, those the document names; a client that registered itself (RFC 7591), every scope, since registration
 * would have given it any: its registered `scope` is what a request without `scope` gets, not a ceiling (an agent
 * steps up after a scope challenge; the person is always asked, such a client never being trusted).
 */
export function askableScopes(client: Pick<Client, 'scope' | 'registrationTokenHash'>): ReadonlySet<string> {
  return new Set(client.registrationTokenHash !== null ? allScopes() : client.scope.split(' '));
}

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

const FAILURE_EVENTS_PER_MINUTE = 10;

/**
 * At most `limit` events per key and window: {@link admit} answers undefined for one to leave out, else how many
 * were left out since the last one admitted (so a flood of failures costs a few rows, and the rows say how many).
 */
class EventBudget {
  private readonly windows = new Map<string, { start: number; count: number; suppressed: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  admit(key: string, now: number): number | undefined {
    let window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      if (this.windows.size >= 10_000) this.windows.clear();
      window = { start: now, count: 0, suppressed: window?.suppressed ?? 0 };
      this.windows.set(key, window);
    }
    if (window.count >= this.limit) {
      window.suppressed += 1;
      return undefined;
    }
    window.count += 1;
    const suppressed = window.suppressed;
    window.suppressed = 0;
    return suppressed;
  }
}

@Injectable()
export class ClientsService {
  private readonly cache = new LRUCache<string, Readonly<Client>>({ max: CLIENT_CACHE_MAX, ttl: CLIENT_CACHE_TTL_MS });
  /** Failed authentications are counted, not each written, past a few a minute per client (unknown ones together). */
  private readonly failureEvents = new EventBudget(FAILURE_EVENTS_PER_MINUTE, 60_000);

  constructor(
    private readonly clients: ClientsRepository,
    private readonly audit: AuditService,
    private readonly metadataDocuments: ClientMetadataConfig,
    private readonly assertions: ClientAssertionVerifier,
    appConfig: AppConfig,
    oauthConfig: OAuthConfig,
  ) {
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
      ...keys,
      createdAt: Date.now(),
    });
    const details = { name, grant_types: grantTypes.join(' ') };
    await this.audit.recorded({ type: 'client.created', clientId: client.id, details }, by, [this.clients.insertOf(client)]);
    return { ...ClientsService.view(client), ...(secret ? { client_secret: secret } : {}) };
  }

  /**
   * Changes what a registered client may do: its allowed scopes, redirect URIs, post-logout redirect URIs and/or
   * (private_key_jwt) its keys (each list replaces the old one). Grants already given keep their scopes; new authorization requests are checked against these (but for
   * a client that registered itself, whose scope is only its default: see AuthorizationRequestValidator).
   */
  async update(clientId: string, changes: UpdateClientInput, by: AuditBy = BY_SYSTEM): Promise<ClientView> {
    // The stored row, not this instance's cached copy (another instance may have changed it a moment ago).
    const found = isRegisteredClientId(clientId) ? await this.clients.findById(clientId) : null;
    if (!found || found.metadataDocument !== null) throw new InvalidClientInputError(`no client with id "${clientId}"`);
    const client = { ...found };
    const keysChanged =
      changes.tokenEndpointAuthMethod !== undefined ||
      changes.jwks !== undefined ||
      changes.jwksUri !== undefined ||
      changes.tokenEndpointAuthSigningAlg !== undefined;
    if (changes.scope === undefined && changes.redirectUris === undefined && changes.postLogoutRedirectUris === undefined && !keysChanged) {
      throw new InvalidClientInputError(
        'give --scope, --redirect-uri, --post-logout-redirect-uri and/or --jwks-file or --jwks-uri (private_key_jwt) to change',
      );
    }
    if (changes.scope !== undefined) client.scope = checkedScope(changes.scope);
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
    if (changes.scope !== undefined) set.scope = client.scope;
    if (changes.redirectUris !== undefined) set.redirectUris = client.redirectUris;
    if (changes.postLogoutRedirectUris !== undefined) set.postLogoutRedirectUris = client.postLogoutRedirectUris;
    if (keysChanged) {
      const keys = changedKeys(found, changes);
      Object.assign(set, keys);
      Object.assign(client, keys);
    }
    await this.audit.recorded({ type: 'client.updated', clientId: client.id, details }, by, [this.updateOf(client.id, set)]);
    this.cache.delete(client.id);
    return ClientsService.view(client);
  }

  /**
   * Replaces what a dynamically registered client registered (RFC 7592 2.2): its name, redirect URIs, scopes,
   * grants, post-logout redirect URIs and (private_key_jwt) keys, checked as at creation. Whether it is public does not change.
   */
  async replaceRegistration(
    clientId: string,
    input: Pick<
      CreateClientInput,
      'name' | 'redirectUris' | 'scope' | 'grantTypes' | 'postLogoutRedirectUris' | 'jwks' | 'jwksUri' | 'tokenEndpointAuthSigningAlg'
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
    };
    const details = { changed: 'registration' };
    await this.audit.recorded({ type: 'client.updated', clientId, details }, by, [this.updateOf(clientId, changes)]);
    this.cache.delete(clientId);
    return { ...found, ...changes };
  }

  /**
   * A page of the registered clients, oldest first (ties by id), as the admin API shows them (not the rows that
   * mirror clients' metadata documents: nobody registered those).
   */
  async list(limit: number, offset: number): Promise<Page<ClientView>> {
    const [rows, total] = await this.clients.pageOfRegistered(limit, offset);
    return { data: rows.map((client) => ClientsService.view(client)), page: { limit, offset, total } };
  }

  /** A new secret for a confidential client, shown once; the old one stops working at once on this instance. */
  async rotateSecret(clientId: string, by: AuditBy = BY_SYSTEM): Promise<ClientView> {
    const client = await this.findRegistered(clientId);
    if (!client) throw new InvalidClientInputError(`no client with id "${clientId}"`);
    if (client.isPublic) throw new InvalidClientInputError('a public client has no secret');
    if (client.tokenEndpointAuthMethod === 'private_key_jwt') throw new InvalidClientInputError('a private_key_jwt client has no secret');
    const secret = randomSecret(32);
    await this.audit.recorded({ type: 'client.secret_rotated', clientId }, by, [
      this.updateOf(clientId, { secretHash: hashSecret(secret) }),
    ]);
    this.cache.delete(clientId);
    return { ...ClientsService.view(client), client_secret: secret };
  }

  /** Deletes a client with its grants, codes, refresh tokens and consents (the caller revokes its access tokens). */
  async remove(clientId: string, by: AuditBy = BY_SYSTEM): Promise<void> {
    await this.audit.recorded({ type: 'client.deleted', clientId }, by, [this.clients.deletionOf(clientId)]);
    this.cache.delete(clientId);
  }

  /** The update of one client's columns, to write with its audit event. */
  private updateOf(clientId: string, changes: Partial<Client>) {
    return this.clients.updateOf(clientId, changes);
  }

  static view(client: Client): ClientView {
    return {
      client_id: client.id,
      name: client.name,
      redirect_uris: client.redirectUris,
      scope: client.scope,
      grant_types: client.grantTypes,
      refresh_grace_seconds: client.refreshGraceSeconds,
      resources: client.resources,
      post_logout_redirect_uris: client.postLogoutRedirectUris,
      public: client.isPublic,
      trusted: client.trusted,
      ...(client.tokenEndpointAuthMethod === 'private_key_jwt'
        ? {
            token_endpoint_auth_method: 'private_key_jwt' as const,
            ...(client.jwks ? { jwks: client.jwks } : {}),
            ...(client.jwksUri ? { jwks_uri: client.jwksUri } : {}),
            ...(client.tokenEndpointAuthSigningAlg ? { token_endpoint_auth_signing_alg: client.tokenEndpointAuthSigningAlg } : {}),
          }
        : {}),
    };
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

  /**
   * Client authentication at /token, /revoke and /introspect: `client_secret_basic`, `client_secret_post`,
   * `private_key_jwt`, or `none` for public clients. Two methods at once is `invalid_request`. A failure (`invalid_client`) is a
   * `client.authentication_failed` event, naming the client when it exists.
   */
  async authenticate(credentials: ClientCredentials, context: AuditContext): Promise<Client> {
    try {
      return await this.checkCredentials(credentials);
    } catch (error) {
      if (error instanceof OAuthError && error.error === 'invalid_client') {
        const named =
          parseBasicCredentials(credentials.authorization)?.id ??
          credentials.clientId ??
          (credentials.clientAssertion !== undefined ? assertionSubject(credentials.clientAssertion) : undefined);
        const known = named !== undefined ? await this.find(named) : undefined;
        const suppressed = this.failureEvents.admit(known?.id ?? '', Date.now());
        if (suppressed !== undefined) {
          const details = { reason: known ? error.description : 'no such client', ...(suppressed ? { suppressed } : {}) };
          await this.audit.record(
            { type: 'client.authentication_failed', actor: 'anonymous', clientId: known?.id ?? null, details },
            context,
          );
        }
      }
      throw error;
    }
  }

  private async checkCredentials(credentials: ClientCredentials): Promise<Client> {
    const header = credentials.authorization;
    if (credentials.clientAssertion !== undefined || credentials.clientAssertionType !== undefined) {
      if (header !== undefined || credentials.clientSecret !== undefined) {
        throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
      }
      return this.checkAssertion(credentials);
    }
    const parsed = parseBasicCredentials(header);
    if (header !== undefined && parsed === undefined) {
      throw new OAuthError('invalid_client', 'Unsupported client authentication.', true);
    }
    if (parsed === null) throw new OAuthError('invalid_client', 'Malformed Basic credentials.', true);
    const basic = parsed;
    const usedBasic = basic !== undefined;
    if (basic && credentials.clientSecret !== undefined) {
      throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
    }
    if (basic && credentials.clientId !== undefined && credentials.clientId !== basic.id) {
      throw new OAuthError('invalid_request', 'client_id does not match the authenticated client.');
    }
    const clientId = basic?.id ?? credentials.clientId;
    const secret = basic?.secret ?? credentials.clientSecret;
    if (!clientId) throw new OAuthError('invalid_client', 'Client authentication is required.', usedBasic);

    const client = await this.find(clientId);
    if (!client) {
      safeEqual(DUMMY_SECRET_HASH, hashSecret(secret ?? ''));
      throw new OAuthError('invalid_client', 'Client authentication failed.', usedBasic);
    }
    if (client.isPublic) {
      if (secret !== undefined && secret !== '') {
        throw new OAuthError('invalid_client', 'A public client has no secret.', usedBasic);
      }
      return client;
    }
    if (client.tokenEndpointAuthMethod === 'private_key_jwt') {
      throw new OAuthError('invalid_client', 'This client authenticates with private_key_jwt.', usedBasic);
    }
    if (secret === undefined || !client.secretHash || !safeEqual(client.secretHash, hashSecret(secret))) {
      throw new OAuthError('invalid_client', 'Client authentication failed.', usedBasic);
    }
    const method = usedBasic ? 'client_secret_basic' : 'client_secret_post';
    if (client.tokenEndpointAuthMethod !== null && client.tokenEndpointAuthMethod !== method) {
      throw new OAuthError('invalid_client', `This client authenticates with ${client.tokenEndpointAuthMethod}.`, usedBasic);
    }
    return client;
  }

  /** `private_key_jwt`: the client is the assertion's `sub` (or `client_id`, which must then be the same). */
  private async checkAssertion(credentials: ClientCredentials): Promise<Client> {
    if (credentials.clientAssertionType !== JWT_BEARER_ASSERTION_TYPE) {
      throw new OAuthError('invalid_client', `client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE}.`);
    }
    const assertion = credentials.clientAssertion;
    if (!assertion) throw new OAuthError('invalid_client', 'client_assertion is required with client_assertion_type.');
    const subject = assertionSubject(assertion);
    if (credentials.clientId !== undefined && subject !== undefined && credentials.clientId !== subject) {
      throw new OAuthError('invalid_client', 'client_id does not match the client assertion.');
    }
    const clientId = credentials.clientId ?? subject;
    const client = clientId ? await this.find(clientId) : undefined;
    if (!client) throw new OAuthError('invalid_client', 'Client authentication failed.');
    if (client.tokenEndpointAuthMethod !== 'private_key_jwt') {
      throw new OAuthError('invalid_client', 'This client does not authenticate with private_key_jwt.');
    }
    await this.assertions.verify(client, assertion, credentials.endpoint ?? '/token');
    return client;
  }
}
