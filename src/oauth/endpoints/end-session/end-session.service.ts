import { Injectable } from '@nestjs/common';
import { ClientsService } from '../../clients/clients.service';
import type { Client } from '../../entities/client.entity';
import { choseOwnRedirectUris } from '../../clients/client-metadata';
import { type IdTokenHint, IdTokenHints } from '../../oidc/id-token-hints';

/** A logout request (OpenID Connect RP-Initiated Logout 1.0, section 2) once checked. */
export type LogoutRequest =
  | { kind: 'invalid'; message: string }
  | {
      kind: 'valid';
      hint: IdTokenHint | null;
      /** The client that asked, when it named itself (`client_id`) or its ID token did. */
      client: Readonly<Client> | null;
      /** A `post_logout_redirect_uri` registered for that client; null: the logout ends on this server's page. */
      redirectUri: string | null;
      state: string | undefined;
    };

/** The parameters a logout request may carry (`logout_hint` and `ui_locales` are accepted and not used). */
const LOGOUT_PARAMS = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state', 'logout_hint', 'ui_locales'] as const;

/**
 * Checks logout requests: the ID token hint (this server's signature; expired is fine; signed by a key that has
 * since left, it is stale and treated as absent, so the person confirms), the client, the redirect.
 */
@Injectable()
export class EndSessionService {
  constructor(
    private readonly hints: IdTokenHints,
    private readonly clients: ClientsService,
  ) {}

  async validate(raw: Record<string, unknown>): Promise<LogoutRequest> {
    const invalid = (message: string): LogoutRequest => ({ kind: 'invalid', message });
    const params: Partial<Record<(typeof LOGOUT_PARAMS)[number], string>> = {};
    for (const name of LOGOUT_PARAMS) {
      const value = raw[name];
      if (value === undefined) continue;
      if (typeof value !== 'string') return invalid(`${name} was sent more than once.`);
      params[name] = value;
    }

    let hint: IdTokenHint | null = null;
    if (params.id_token_hint !== undefined) {
      const checked = await this.hints.check(params.id_token_hint);
      if (checked.kind === 'invalid') return invalid('id_token_hint is not an ID token issued by this server.');
      if (checked.kind === 'valid') hint = checked.hint;
    }
    const clientId = params.client_id ?? hint?.clientId;
    if (params.client_id !== undefined && hint && hint.clientId !== params.client_id) {
      return invalid('client_id is not the client of id_token_hint.');
    }
    const client = clientId === undefined ? undefined : await this.clients.find(clientId);
    if (params.client_id !== undefined && !client) return invalid('The client (client_id) is not registered.');

    const redirectUri = params.post_logout_redirect_uri;
    if (redirectUri !== undefined) {
      if (!client) return invalid('post_logout_redirect_uri needs client_id or id_token_hint to name the client.');
      if (!client.postLogoutRedirectUris.includes(redirectUri)) {
        return invalid('post_logout_redirect_uri is not registered for this client.');
      }
    }
    return { kind: 'valid', hint, client: client ?? null, redirectUri: redirectUri ?? null, state: params.state };
  }

  /**
   * Whether the browser is sent on to the request's `post_logout_redirect_uri` on its own, or shown a page with a
   * link there: RP-Initiated Logout 1.0 2 allows it without an ID token of the client only by other means, and RFC
   * 9700 4.11.2 only to URIs the server trusts. An operator's client: on an ID token of it, or once the person chose
   * "Sign out". A client that chose its own URIs: only on an ID token of the session just ended (an attacker can
   * get one of their own session with their own client, never one of the victim's).
   */
  redirectsOnItsOwn(
    request: Extract<LogoutRequest, { kind: 'valid' }>,
    ended: { sid: string; userId: string } | null,
    confirmed = false,
  ): boolean {
    const { client, hint } = request;
    if (!client) return false;
    if (choseOwnRedirectUris(client)) return hint !== null && ended !== null && hint.sid === ended.sid && hint.sub === ended.userId;
    return hint !== null || confirmed;
  }

  /** Where the browser goes after the logout: the redirect URI with `state`. */
  redirectTo(redirectUri: string, state: string | undefined): string {
    const url = new URL(redirectUri);
    if (state !== undefined) url.searchParams.append('state', state);
    return url.toString();
  }
}
