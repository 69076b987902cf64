import { Injectable } from '@nestjs/common';
import { compactVerify } from 'jose';
import { AppConfig } from '../config/app-config';
import { SigningKeysService } from '../keys/signing-keys.service';
import { ClientsService } from './clients.service';
import type { Client } from './entities/client.entity';

/** What an `id_token_hint` says of the login it came from. */
export interface IdTokenHint {
  sub: string;
  /** The client it was issued to (its `aud`). */
  clientId: string;
  sid: string | null;
}

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

/** Checks logout requests: the ID token hint (this server's signature; expired is fine), the client, the redirect. */
@Injectable()
export class EndSessionService {
  constructor(
    private readonly config: AppConfig,
    private readonly keys: SigningKeysService,
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
      hint = await this.verifyHint(params.id_token_hint);
      if (!hint) return invalid('id_token_hint is not an ID token issued by this server.');
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

  /** Where the browser goes after the logout: the redirect URI with `state`. */
  redirectTo(redirectUri: string, state: string | undefined): string {
    const url = new URL(redirectUri);
    if (state !== undefined) url.searchParams.append('state', state);
    return url.toString();
  }

  /**
   * An ID token of this server (RS256, `typ: JWT`, a published key, this issuer), whatever its expiry: a client
   * may sign out a person long after the token's lifetime (RP-Initiated Logout 1.0, section 2).
   */
  private async verifyHint(token: string): Promise<IdTokenHint | null> {
    if (token.length > 8192) return null;
    try {
      const { payload, protectedHeader } = await compactVerify(
        token,
        async (header) => {
          const key = header.kid ? await this.keys.verificationKey(header.kid) : undefined;
          if (!key) throw new Error('unknown key');
          return key;
        },
        { algorithms: ['RS256'] },
      );
      // An access token (typ at+jwt) is no ID token.
      if (protectedHeader.typ !== 'JWT') return null;
      const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
      const aud = Array.isArray(claims.aud) && claims.aud.length === 1 ? claims.aud[0] : claims.aud;
      if (claims.iss !== this.config.issuer || typeof claims.sub !== 'string' || typeof aud !== 'string') return null;
      return { sub: claims.sub, clientId: aud, sid: typeof claims.sid === 'string' ? claims.sid : null };
    } catch {
      return null;
    }
  }
}
