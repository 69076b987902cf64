import type { Client } from '../entities/client.entity';
import type { ClientView } from './client-metadata';

/** A client as the command line and the admin API show it (never its secret, which only its creation shows). */
export function clientView(client: Client): ClientView {
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
    ...(client.minimumAcr ? { minimum_acr: client.minimumAcr } : {}),
    ...(client.requirePushedRequests ? { require_pushed_authorization_requests: true as const } : {}),
    ...(client.dpopBoundAccessTokens ? { dpop_bound_access_tokens: true as const } : {}),
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
