import { Injectable } from '@nestjs/common';
import { CLIENT_CREDENTIALS_GRANT_PREFIX } from '../../auth/revoked-grants.service';
import { AppConfig } from '../../config/app-config';
import type { Client } from '../entities/client.entity';
import { OAuthError } from '../oauth-error';
import { ResourceIndicators } from '../resource-indicators';
import { TokenIssuer, type TokenResponse } from './token-issuer.service';

/**
 * The `gid` of a client's client-credentials tokens: one per client, so revoking one token (RFC 7009), rotating the
 * secret or deleting the client puts it on the revoked list, and every token the client obtained until then dies
 * (those obtained later are not affected: the list compares issue times).
 */
export function clientCredentialsGrantId(clientId: string): string {
  return `${CLIENT_CREDENTIALS_GRANT_PREFIX}${clientId}`;
}

/**
 * The client-credentials grant (RFC 6749 4.4): a confidential client allowed it obtains an access token for
 * itself. Nothing is stored; there is no refresh token.
 */
@Injectable()
export class ClientCredentialsGrantService {
  constructor(
    private readonly issuer: TokenIssuer,
    private readonly config: AppConfig,
    private readonly resources: ResourceIndicators,
  ) {}

  issue(client: Client, requestedScope: string | undefined, resource?: string, jkt?: string): TokenResponse {
    // A public client presents no secret: it has not authenticated as anyone (RFC 6749 4.4.2 requires it).
    if (client.isPublic) throw new OAuthError('invalid_client', 'A public client cannot use the client_credentials grant.');
    if (!client.grantTypes.includes('client_credentials')) {
      throw new OAuthError('unauthorized_client', 'This client is not allowed the client_credentials grant.');
    }
    const scope = grantedScope(client, requestedScope);
    const audience = this.resources.audience(this.resources.atTokenEndpoint(client, resource));
    const access = this.issuer.mintAccessToken({
      sub: client.id,
      clientId: client.id,
      scope,
      grantId: clientCredentialsGrantId(client.id),
      clientCredentials: true,
      audience,
      jkt,
    });
    return { access_token: access.token, token_type: jkt ? 'DPoP' : 'Bearer', expires_in: this.config.accessTokenTtl, scope };
  }
}

/** The requested scopes when the client may have each of them (every allowed one when none is asked for). */
function grantedScope(client: Client, requested: string | undefined): string {
  if (requested === undefined || requested.trim() === '') return client.scope;
  const allowed = new Set(client.scope.split(' '));
  const scopes = [...new Set(requested.split(' ').filter(Boolean))];
  const refused = scopes.filter((s) => !allowed.has(s));
  if (refused.length) throw new OAuthError('invalid_scope', `Scope not allowed for this client: ${refused.join(' ')}`);
  return scopes.join(' ');
}
