import { OAuthConfig } from '../oauth.config';
import { ACR_VALUES } from '../../auth/acr';
import { ApiProblems } from '../../common/openapi';
import { Controller, Get, Header } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { NoQueryParams } from '../../common/validation';
import { Public } from '../../auth/auth.decorators';
import { allScopes } from '../../auth/scopes';
import { ASSERTION_SIGNING_ALGS } from '../client-auth/client-jwks';
import { GRANT_TYPES } from '../entities/client.entity';
import { SCOPE_CLAIMS } from '../oidc/oidc.scopes';
import { RegistrationService } from '../clients/registration/registration.service';
import { DPOP_ALGS } from '../../auth/dpop-proofs.service';
import { ClientMetadataConfig } from '../clients/cimd/client-metadata.config';

/** The claims of the ID token and of UserInfo (by scope). */
const CLAIMS_SUPPORTED = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'amr',
  'acr',
  'nonce',
  'sid',
  'at_hash',
  ...Object.values(SCOPE_CLAIMS).flat(),
];

/**
 * RFC 8414 authorization server metadata and OpenID Connect Discovery 1.0: one document, served at both addresses
 * (RFC 8414 section 2 lets the OpenID fields appear in it).
 */
@Public()
// A query parameter of any name is 400 here (none is taken).
@ApiProblems(400)
@Controller('.well-known')
export class MetadataController {
  constructor(
    private readonly config: AppConfig,
    private readonly registration: RegistrationService,
    private readonly metadataDocuments: ClientMetadataConfig,
    private readonly oauthConfig: OAuthConfig,
  ) {}

  @Get('oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  metadata(@NoQueryParams() _query: unknown) {
    return this.document();
  }

  @Get('openid-configuration')
  @Header('Cache-Control', 'public, max-age=300')
  openidConfiguration(@NoQueryParams() _query: unknown) {
    return this.document();
  }

  private document() {
    const issuer = this.config.issuer;
    return {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      revocation_endpoint: `${issuer}/revoke`,
      introspection_endpoint: `${issuer}/introspect`,
      ...(this.registration.enabled ? { registration_endpoint: `${issuer}/register` } : {}),
      scopes_supported: allScopes(),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: [...GRANT_TYPES],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_SIGNING_ALGS],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      revocation_endpoint_auth_signing_alg_values_supported: [...ASSERTION_SIGNING_ALGS],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      introspection_endpoint_auth_signing_alg_values_supported: [...ASSERTION_SIGNING_ALGS],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      // RFC 9126 5.
      pushed_authorization_request_endpoint: `${issuer}/par`,
      // RFC 8628 4.
      device_authorization_endpoint: `${issuer}/device_authorization`,
      require_pushed_authorization_requests: this.oauthConfig.requirePushedRequests,
      // RFC 9449 5.1: DPoP proofs are accepted at the token endpoint (and required with DPOP_REQUIRED).
      dpop_signing_alg_values_supported: [...DPOP_ALGS],
      // draft-ietf-oauth-client-id-metadata-document: an https URL of the client's own metadata document as client_id.
      ...(this.metadataDocuments.enabled ? { client_id_metadata_document_supported: true } : {}),
      // OpenID Connect Discovery 1.0, section 3.
      userinfo_endpoint: `${issuer}/userinfo`,
      // OpenID Connect RP-Initiated Logout 1.0, section 2.1.
      end_session_endpoint: `${issuer}/end-session`,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      claims_supported: CLAIMS_SUPPORTED,
      // The levels acr_values may ask for (and ID and access tokens carry), weakest first: see auth/acr.ts.
      acr_values_supported: [...ACR_VALUES],
      claim_types_supported: ['normal'],
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    };
  }
}
