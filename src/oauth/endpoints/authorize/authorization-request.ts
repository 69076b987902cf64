import { type PushedRequest, PushedRequestsService } from '../../par/pushed-requests.service';
import { OAuthConfig } from '../../oauth.config';
import type { Acr } from '../../../auth/acr';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { ClientsService } from '../../clients/clients.service';
import { choseOwnRedirectUris } from '../../clients/client-metadata';
import { isClientIdUrl } from '../../clients/cimd/client-id-url';
import { ClientMetadataDocuments, ClientMetadataError } from '../../clients/cimd/client-metadata.service';
import { IdTokenHints } from '../../oidc/id-token-hints';
import { OidcScope } from '../../oidc/oidc.scopes';
import type { Client } from '../../entities/client.entity';
import { safeDescription } from '../../oauth-error';
import { isRegisteredRedirectUri } from '../../clients/redirect-uris';
import { InvalidTargetError, ResourceIndicators } from '../../resource-indicators';
import { PKCE_VALUE } from '../../../crypto/secrets';
import { type Prompt, signInParamsOf } from './sign-in-params';
import { requestedScope } from './requested-scope';

export { PROMPT_VALUES, type Prompt } from './sign-in-params';

export type RawParams = Record<string, unknown>;

/** The parameters of an authorization request that the consent form carries back. */
export const AUTHORIZE_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
  'nonce',
  // The level the request asks for holds at the consent form's post too.
  'acr_values',
  // RFC 9449 10: the key the code is bound to.
  'dpop_jkt',
] as const;

/** A JWK SHA-256 thumbprint (RFC 7638), base64url: `dpop_jkt`. */
const JWK_THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/** The longest `nonce` stored with a code (OpenID Connect sets no limit; a client needs far less than this). */
export const MAX_NONCE_LENGTH = 512;
/** A nonce: printable ASCII (as `state`; control characters never reach the database). */
const NONCE = new RegExp(`^[\\x20-\\x7E]{1,${MAX_NONCE_LENGTH}}$`);

/** The longest `scope`, and the longest of any other parameter (an `id_token_hint` or a JWT in `state` fits). */
const MAX_SCOPE_LENGTH = 1000;
const MAX_PARAM_LENGTH = 4096;

export type AuthorizationRequestResult =
  /** Unknown client or redirect URI: answered with an HTML page, never a redirect. */
  | { kind: 'fatal'; message: string }
  /**
   * An error the client learns of through its redirect URI. `selfRegistered`: the client registered itself (RFC
   * 7591) or is identified by its metadata document's URL, so its redirect URI is anyone's choice: before the person has seen a page, such an error is shown,
   * not redirected (RFC 9700 4.11.2), so that the server is no open redirector.
   */
  | { kind: 'error'; redirectUri: string; error: string; description: string; state?: string; selfRegistered: boolean }
  | {
      kind: 'valid';
      client: Client;
      redirectUri: string;
      /** As sent to /authorize (null when left out): the token request must repeat it. */
      sentRedirectUri: string | null;
      scope: string;
      /** RFC 8707 resources named (empty: none, the API). */
      resources: string[];
      state?: string;
      codeChallenge: string | null;
      /** RFC 9449 10: the thumbprint of the DPoP key the code is bound to (`dpop_jkt`, or the key of /par's proof). */
      dpopJkt: string | null;
      /** OpenID Connect: the `nonce` the ID token of this code repeats (null when none was sent). */
      nonce: string | null;
      /** The `prompt` values sent (empty: none). */
      prompt: ReadonlySet<Prompt>;
      /** `max_age` in seconds, or null: the login of the session must be at most this old. */
      maxAge: number | null;
      /** `login_hint`, to prefill the login form's email with and nothing else; null when absent or unusable. */
      loginHint: string | null;
      /**
       * The user an `id_token_hint` names (its `sub`): the session must be theirs, or a login is needed (with
       * prompt=none, `login_required`). Null when no hint was sent, or a stale one (signed by a key that has left).
       */
      hintedUser: string | null;
      /**
       * The sign-in level the code needs (`acr`, see auth/acr.ts): the weakest known value of `acr_values`, or
       * the client's own minimum when that is stronger; null when neither asks for one.
       */
      acr: Acr | null;
      /**
       * A pushed request (RFC 9126), sent as `request_uri`: its stored row, used up by the answer. `params` are
       * then `client_id` and `request_uri` only (what the consent form carries back).
       */
      pushed: PushedRequest | null;
      params: Record<string, string | undefined>;
    };

/** Whether a request's `scope` names `openid` (a repeated or structured scope is refused later anyway). */
function isOpenIdRequest(scope: unknown): boolean {
  return typeof scope === 'string' && scope.split(' ').includes(OidcScope.openid);
}

function single(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  return null; // repeated or structured
}

/** Validates /authorize (and the consent form's echo of it) in the order of RFC 6749 4.1.2.1: errors about the client or its redirect URI first (never redirected), then the rest (redirected). */
@Injectable()
export class AuthorizationRequestValidator {
  constructor(
    private readonly clients: ClientsService,
    private readonly config: AppConfig,
    private readonly resources: ResourceIndicators,
    private readonly metadataDocuments: ClientMetadataDocuments,
    private readonly hints: IdTokenHints,
    private readonly pushedRequests: PushedRequestsService,
    private readonly oauthConfig: OAuthConfig,
  ) {}

  /**
   * `front`: a request at /authorize (or the consent form's echo of it), perhaps by `request_uri`; `push`: one
   * posted to /par to be stored; `pushed`: the stored parameters a `request_uri` names.
   */
  async validate(raw: RawParams, mode: 'front' | 'push' | { pushed: string } = 'front'): Promise<AuthorizationRequestResult> {
    const clientId = single(raw.client_id);
    if (!clientId) return { kind: 'fatal', message: 'The request does not name a valid client (client_id).' };
    let client: Client | undefined;
    if (this.metadataDocuments.config.enabled && isClientIdUrl(clientId)) {
      try {
        client = await this.metadataDocuments.client(clientId);
      } catch (error) {
        if (!(error instanceof ClientMetadataError)) throw error;
        return { kind: 'fatal', message: `The client's metadata document (client_id) cannot be used: ${error.message}.` };
      }
    } else {
      client = await this.clients.find(clientId);
    }
    if (!client) return { kind: 'fatal', message: 'The client (client_id) is not registered.' };

    // RFC 9126 4: a request_uri stands for the pushed request, whose parameters alone count.
    if (mode === 'front' && raw.request_uri !== undefined) return this.resolvePushed(raw.request_uri, client);

    const sentRedirect = single(raw.redirect_uri);
    if (sentRedirect === null) return { kind: 'fatal', message: 'redirect_uri was sent more than once.' };
    let redirectUri: string;
    if (sentRedirect === undefined) {
      if (client.redirectUris.length !== 1) {
        return { kind: 'fatal', message: 'redirect_uri is required for this client.' };
      }
      // OpenID Connect requires it in every authentication request (Core 3.1.2.1), whatever the client registered.
      if (isOpenIdRequest(raw.scope)) {
        return { kind: 'fatal', message: 'redirect_uri is required in an OpenID Connect request (scope openid).' };
      }
      redirectUri = client.redirectUris[0];
    } else if (isRegisteredRedirectUri(client.redirectUris, sentRedirect)) {
      redirectUri = sentRedirect;
    } else {
      return { kind: 'fatal', message: 'redirect_uri is not registered for this client.' };
    }

    const stateValue = single(raw.state);
    const state = typeof stateValue === 'string' ? stateValue : undefined;
    const fail = (error: string, description: string): AuthorizationRequestResult => ({
      kind: 'error',
      redirectUri,
      error,
      description: safeDescription(description),
      state,
      selfRegistered: choseOwnRedirectUris(client),
    });

    const params: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(raw)) {
      // `resource` may be repeated (RFC 8707 2): the values are joined as one space-separated list.
      if (name === 'resource' && Array.isArray(value) && value.every((v) => typeof v === 'string')) continue;
      if (value !== undefined && typeof value !== 'string') return fail('invalid_request', `${name} was sent more than once.`);
    }
    // A URL bounds what the front channel can send; /par's body is bounded here the same way, before anything is stored.
    for (const [name, value] of Object.entries(raw)) {
      const limit = name === 'scope' ? MAX_SCOPE_LENGTH : MAX_PARAM_LENGTH;
      if (typeof value === 'string' && value.length > limit) return fail('invalid_request', `${name} must be at most ${limit} characters.`);
    }
    for (const name of AUTHORIZE_PARAMS) params[name] = raw[name] as string | undefined;
    if (Array.isArray(raw.resource)) params.resource = (raw.resource as string[]).join(' ');

    if (!client.grantTypes.includes('authorization_code')) {
      return fail('unauthorized_client', 'This client is not allowed the authorization_code grant.');
    }

    const responseType = params.response_type;
    if (!responseType) return fail('invalid_request', 'response_type is required.');
    if (responseType !== 'code') return fail('unsupported_response_type', 'Only response_type=code is supported.');

    const scoped = requestedScope(client, params.scope);
    if ('invalid' in scoped) return fail('invalid_scope', scoped.invalid);
    const { scope } = scoped;

    let resources: string[];
    try {
      resources = this.resources.requested(client, params.resource);
    } catch (error) {
      if (error instanceof InvalidTargetError) return fail('invalid_target', error.message);
      throw error;
    }

    const challenge = params.code_challenge;
    const method = params.code_challenge_method;
    if (challenge !== undefined) {
      if (method === undefined) return fail('invalid_request', 'code_challenge_method is required; only S256 is supported.');
      if (method !== 'S256') return fail('invalid_request', 'Only code_challenge_method=S256 is supported.');
      if (!PKCE_VALUE.test(challenge)) return fail('invalid_request', 'code_challenge is malformed.');
    } else if (method !== undefined) {
      return fail('invalid_request', 'code_challenge_method was sent without code_challenge.');
    } else if (client.isPublic) {
      return fail('invalid_request', 'PKCE (code_challenge with S256) is required for public clients.');
    }

    // Request objects (Core 6, RFC 9101) are not supported: refused with the errors Core 6.1 and 6.2 name, rather
    // than ignored, since the parameters they carry would otherwise silently not apply.
    if (raw.request !== undefined) return fail('request_not_supported', 'Request objects (request) are not supported.');
    if (raw.request_uri !== undefined) return fail('invalid_request', 'request_uri cannot be pushed.');
    if (mode === 'front' && (client.requirePushedRequests || this.oauthConfig.requirePushedRequests)) {
      return fail('invalid_request', 'This client must push its authorization requests to /par (RFC 9126) and send request_uri.');
    }

    if (params.dpop_jkt !== undefined && !JWK_THUMBPRINT.test(params.dpop_jkt)) {
      return fail('invalid_request', 'dpop_jkt must be the base64url SHA-256 thumbprint of a JWK (43 characters).');
    }

    const nonce = params.nonce;
    if (nonce !== undefined && !NONCE.test(nonce)) {
      return fail('invalid_request', `nonce must be 1 to ${MAX_NONCE_LENGTH} printable ASCII characters.`);
    }

    // prompt, max_age and login_hint apply to the request as sent, not to the consent form's echo of it (which
    // does not carry them): the login and consent they ask for happen before that form.
    const sent = raw as Record<string, string | undefined>;
    const signIn = signInParamsOf(sent, client.minimumAcr);
    if ('invalid' in signIn) return fail('invalid_request', signIn.invalid);
    const { prompt, maxAge, loginHint, acr } = signIn;

    let hintedUser: string | null = null;
    if (sent.id_token_hint !== undefined) {
      const checked = await this.hints.check(sent.id_token_hint);
      if (checked.kind === 'invalid') return fail('invalid_request', 'id_token_hint is not an ID token issued by this server.');
      if (checked.kind === 'valid') {
        if (checked.hint.clientId !== client.id) return fail('invalid_request', 'id_token_hint was issued to another client.');
        hintedUser = checked.hint.sub;
      }
    }

    return {
      kind: 'valid',
      client,
      redirectUri,
      sentRedirectUri: sentRedirect ?? null,
      scope,
      resources,
      state,
      codeChallenge: challenge ?? null,
      dpopJkt: params.dpop_jkt ?? null,
      nonce: nonce ?? null,
      prompt,
      maxAge,
      loginHint,
      hintedUser,
      acr,
      pushed: null,
      params,
    };
  }

  /** The pushed request a `request_uri` names (live, unused, this client's), validated as it was sent to /par. */
  private async resolvePushed(value: unknown, client: Client): Promise<AuthorizationRequestResult> {
    const found = typeof value === 'string' ? await this.pushedRequests.resolve(value, client.id) : undefined;
    if (!found) return { kind: 'fatal', message: "The request_uri is unknown, expired, used already, or another client's." };
    const result = await this.validate({ ...found.params, client_id: client.id }, { pushed: found.id });
    if (result.kind !== 'valid') return result;
    return { ...result, pushed: found, params: { client_id: client.id, request_uri: value as string } };
  }

  /** The client's redirect URI with response parameters and `iss` (RFC 9207) added. */
  redirectTo(redirectUri: string, values: Record<string, string | undefined>): string {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(values)) if (value !== undefined) url.searchParams.append(name, value);
    url.searchParams.append('iss', this.config.issuer);
    return url.toString();
  }
}
