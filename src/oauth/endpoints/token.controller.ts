import { type AuditContext, Origin } from '../../audit/audit-events';
import { Controller, Header, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppConfig } from '../../config/app-config';
import { DpopProofs } from '../../auth/dpop-proofs.service';
import { proofKeyAt } from '../dpop-binding';
import { Public } from '../../auth/auth.decorators';
import { ApiOAuthEndpoint } from '../../common/openapi';
import { RateLimit } from '../../rate-limit/rate-limit';
import { namedClient } from '../client-auth/named-client';
import { MetricsService } from '../../metrics/metrics.service';
import { AuthenticatedClient, CLIENT_ASSERTION_PROPERTIES, ClientAuthGuard, OAuthForm } from '../client-auth/client-auth.guard';
import { CodeGrantService } from '../grants/code-grant.service';
import { ClientCredentialsGrantService } from '../grants/client-credentials-grant.service';
import { type Client, DEVICE_CODE_GRANT, GRANT_TYPES, type GrantType, TOKEN_EXCHANGE_GRANT } from '../entities/client.entity';
import { DeviceAuthorizationService } from '../device/device-authorization.service';
import { OAuthError } from '../oauth-error';
import { OAuthErrorFilter } from '../oauth-error.filter';
import { RefreshGrantService } from '../grants/refresh-grant.service';
import { TokenIssuer, type TokenResponse } from '../grants/token-issuer.service';
import { ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE, TokenExchangeGrantService } from '../grants/token-exchange-grant.service';

function allowed(client: Client, grant: GrantType): void {
  if (!client.grantTypes.includes(grant)) throw new OAuthError('unauthorized_client', `This client is not allowed the ${grant} grant.`);
}

/** The token endpoint (RFC 6749 3.2): the authorization-code, refresh-token, client-credentials and token-exchange (RFC 8693) grants. */
@Public()
@Controller('token')
@UseFilters(OAuthErrorFilter)
export class TokenController {
  constructor(
    private readonly codeGrant: CodeGrantService,
    private readonly refreshGrant: RefreshGrantService,
    private readonly clientCredentials: ClientCredentialsGrantService,
    private readonly tokenExchange: TokenExchangeGrantService,
    private readonly device: DeviceAuthorizationService,
    private readonly metrics: MetricsService,
    private readonly proofs: DpopProofs,
    config: AppConfig,
  ) {
    metrics.declareGrantTypes(GRANT_TYPES);
    this.tokenUrl = `${config.issuer}/token`;
  }

  /** This endpoint's URL, which a DPoP proof's `htu` names. */
  private readonly tokenUrl: string;

  @Post()
  @ApiOAuthEndpoint({
    properties: {
      grant_type: { type: 'string', enum: [...GRANT_TYPES] },
      code: { type: 'string', description: 'authorization_code' },
      redirect_uri: { type: 'string', description: 'authorization_code: as sent to /authorize, if it was' },
      code_verifier: { type: 'string', description: 'authorization_code: the PKCE verifier, if a challenge was sent' },
      refresh_token: { type: 'string', description: 'refresh_token' },
      device_code: { type: 'string', description: `${DEVICE_CODE_GRANT} (RFC 8628): from /device_authorization` },
      scope: {
        type: 'string',
        description:
          "refresh_token: a subset of the grant; client_credentials: a subset of the client's scopes (all when omitted); token exchange: a subset of the subject token's (all the client may have when omitted); space-separated",
      },
      resource: {
        type: 'array',
        items: { type: 'string', format: 'uri' },
        description:
          "RFC 8707: the resources the access token is for (repeatable); its aud. Default: those of the authorization, else the API (token exchange: the subject token's)",
      },
      subject_token: {
        type: 'string',
        description: 'token exchange (RFC 8693): an access token of this server for the person the new token acts for',
      },
      subject_token_type: { type: 'string', enum: [ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE], description: 'token exchange: required' },
      actor_token: {
        type: 'string',
        description: 'token exchange: an access token of this server naming who acts (act.sub); with actor_token_type',
      },
      actor_token_type: { type: 'string', enum: [ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE], description: 'token exchange: with actor_token' },
      requested_token_type: { type: 'string', enum: [ACCESS_TOKEN_TYPE], description: 'token exchange: only an access token is issued' },
      audience: {
        type: 'array',
        items: { type: 'string', format: 'uri' },
        description: 'token exchange (repeatable): a resource URI, as resource',
      },
      client_id: { type: 'string', description: 'client_secret_post and public clients; optional with client_assertion (then its sub)' },
      client_secret: { type: 'string', description: 'client_secret_post' },
      ...CLIENT_ASSERTION_PROPERTIES,
    },
    required: ['grant_type'],
    ok: {
      description: 'Tokens (RFC 6749 5.1); Cache-Control: no-store',
      schema: {
        type: 'object',
        required: ['access_token', 'token_type', 'expires_in', 'scope'],
        properties: {
          access_token: { type: 'string', description: 'RFC 9068 JWT, RS256' },
          token_type: {
            type: 'string',
            enum: ['Bearer', 'DPoP'],
            description: "DPoP: bound to the key of the request's DPoP proof (RFC 9449)",
          },
          expires_in: { type: 'integer' },
          refresh_token: { type: 'string', description: 'not for client_credentials nor token exchange' },
          issued_token_type: { type: 'string', enum: [ACCESS_TOKEN_TYPE], description: 'token exchange (RFC 8693 2.2.1)' },
          id_token: { type: 'string', description: 'OpenID Connect: when openid is granted (code and refresh grants), RS256 JWT' },
          scope: { type: 'string' },
        },
      },
    },
    errorCodes: [
      'invalid_request',
      'invalid_grant',
      'unauthorized_client',
      'unsupported_grant_type',
      'invalid_scope',
      'invalid_target',
      'invalid_dpop_proof',
      'use_dpop_nonce',
      'authorization_pending',
      'slow_down',
      'access_denied',
      'expired_token',
    ],
    rateLimited: true,
  })
  // Decorators apply bottom-up, so the rate limit is checked before the client is authenticated.
  @UseGuards(ClientAuthGuard)
  @RateLimit('token', namedClient)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  async token(
    @AuthenticatedClient() client: Client,
    @OAuthForm() form: Record<string, string>,
    @Origin() origin: AuditContext,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<TokenResponse> {
    const jkt = await this.proofKey(client, req.headers.dpop, res);
    const tokens = await this.grant(client, form, origin, jkt);
    // Counted here, where every grant's success passes once (a grant service has several ways to succeed).
    this.metrics.tokenIssued(form.grant_type as GrantType);
    return tokens;
  }

  /**
   * RFC 9449 5: the thumbprint of the key of the request's DPoP proof, which the tokens are then bound to;
   * undefined without a proof, unless the client or the server requires one. With nonces on, every answer names
   * the current one (`DPoP-Nonce`), and a proof without it is refused with `use_dpop_nonce`.
   */
  private async proofKey(client: Client, header: string | string[] | undefined, res: Response): Promise<string | undefined> {
    const jkt = await proofKeyAt(this.proofs, header, this.tokenUrl, res);
    if (jkt === undefined && (client.dpopBoundAccessTokens || this.proofs.config.required)) {
      throw new OAuthError('invalid_dpop_proof', 'Tokens for this client must be bound to a key: send a DPoP proof.');
    }
    return jkt;
  }

  private async grant(client: Client, form: Record<string, string>, origin: AuditContext, jkt: string | undefined): Promise<TokenResponse> {
    switch (form.grant_type) {
      case undefined:
      case '':
        throw new OAuthError('invalid_request', 'grant_type is required.');
      case 'authorization_code':
        allowed(client, 'authorization_code');
        return this.codeGrant.exchange(
          client,
          {
            code: form.code,
            redirectUri: form.redirect_uri,
            codeVerifier: form.code_verifier,
            resource: form.resource,
            jkt,
          },
          origin,
        );
      case 'refresh_token':
        allowed(client, 'refresh_token');
        return this.refreshGrant.refresh(client, form.refresh_token, form.scope, form.resource, origin, jkt);
      case 'client_credentials':
        return this.clientCredentials.issue(client, form.scope, form.resource, jkt);
      case TOKEN_EXCHANGE_GRANT:
        return this.tokenExchange.exchange(
          client,
          {
            subjectToken: form.subject_token,
            subjectTokenType: form.subject_token_type,
            actorToken: form.actor_token,
            actorTokenType: form.actor_token_type,
            requestedTokenType: form.requested_token_type,
            resource: form.resource,
            audience: form.audience,
            scope: form.scope,
          },
          origin,
          jkt,
        );
      case DEVICE_CODE_GRANT:
        allowed(client, DEVICE_CODE_GRANT);
        return this.device.poll(client, form.device_code, TokenIssuer.bindingFor(client, jkt), origin);
      default:
        throw new OAuthError('unsupported_grant_type', `Supported: ${GRANT_TYPES.join(', ')}.`);
    }
  }
}
