import { Controller, Header, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DpopProofs } from '../../auth/dpop-proofs.service';
import { AppConfig } from '../../config/app-config';
import { proofKeyAt } from '../dpop-binding';
import { Public } from '../../auth/auth.decorators';
import { RateLimit } from '../../rate-limit/rate-limit';
import { namedClient } from '../client-auth/named-client';
import { ApiOAuthEndpoint } from '../../common/openapi';
import { AuthenticatedClient, CLIENT_ASSERTION_PROPERTIES, ClientAuthGuard, OAuthForm } from '../client-auth/client-auth.guard';
import type { Client } from '../entities/client.entity';
import { OAuthError } from '../oauth-error';
import { OAuthErrorFilter } from '../oauth-error.filter';
import { PUSHED_REQUEST_TTL_SECONDS, PushedRequestsService } from '../par/pushed-requests.service';
import { AuthorizationRequestValidator } from './authorize/authorization-request';

/** What the client authenticates with: never stored with the request. */
const CLIENT_AUTHENTICATION = new Set(['client_secret', 'client_assertion', 'client_assertion_type']);

/**
 * The pushed authorization request endpoint (RFC 9126): the client authenticates as at /token and posts the
 * parameters it would send to /authorize; they are checked as /authorize checks them and stored, and the client
 * sends the browser to `/authorize?client_id=…&request_uri=…` instead, so nothing in the front channel can alter them.
 */
@Public()
@Controller('par')
@UseFilters(OAuthErrorFilter)
export class PushedAuthorizationController {
  constructor(
    private readonly validator: AuthorizationRequestValidator,
    private readonly pushed: PushedRequestsService,
    private readonly proofs: DpopProofs,
    private readonly config: AppConfig,
  ) {}

  @Post()
  @ApiOAuthEndpoint({
    properties: {
      response_type: { type: 'string', enum: ['code'] },
      client_id: { type: 'string' },
      redirect_uri: { type: 'string' },
      scope: { type: 'string' },
      state: { type: 'string' },
      code_challenge: { type: 'string' },
      code_challenge_method: { type: 'string', enum: ['S256'] },
      nonce: { type: 'string' },
      resource: { type: 'string' },
      prompt: { type: 'string' },
      max_age: { type: 'string' },
      login_hint: { type: 'string' },
      acr_values: { type: 'string' },
      dpop_jkt: {
        type: 'string',
        description: 'RFC 9449 10: the thumbprint of the DPoP key the code is bound to (a DPoP proof here binds it too)',
      },
      client_secret: { type: 'string' },
      ...CLIENT_ASSERTION_PROPERTIES,
    },
    required: ['response_type'],
    ok: {
      status: 201,
      description: 'Stored: the request_uri to send to /authorize with client_id, and its lifetime in seconds (RFC 9126 2.2)',
      schema: {
        type: 'object',
        required: ['request_uri', 'expires_in'],
        properties: { request_uri: { type: 'string' }, expires_in: { type: 'integer' } },
      },
    },
    errorCodes: [
      'invalid_request',
      'invalid_scope',
      'invalid_target',
      'unauthorized_client',
      'unsupported_response_type',
      'request_not_supported',
      'invalid_dpop_proof',
      'use_dpop_nonce',
    ],
    rateLimited: true,
  })
  // Decorators apply bottom-up: the token endpoint's rate limit is checked before the client is authenticated.
  @UseGuards(ClientAuthGuard)
  @RateLimit('token', namedClient)
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  async push(
    @AuthenticatedClient() client: Client,
    @OAuthForm() form: Record<string, string>,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ request_uri: string; expires_in: number }> {
    const params = Object.fromEntries(Object.entries(form).filter(([name]) => !CLIENT_AUTHENTICATION.has(name)));
    // RFC 9449 10.1: a proof here binds the code to its key, as dpop_jkt does (which must then name the same key).
    const jkt = await proofKeyAt(this.proofs, req.headers.dpop, `${this.config.issuer}/par`, res);
    if (jkt !== undefined) {
      if (params.dpop_jkt !== undefined && params.dpop_jkt !== jkt) {
        throw new OAuthError('invalid_dpop_proof', 'dpop_jkt does not name the key of the DPoP proof.');
      }
      params.dpop_jkt = jkt;
    }
    const checked = await this.validator.validate({ ...params, client_id: client.id }, 'push');
    // Nothing is redirected from here: every refusal is the client's to hear (RFC 9126 2.3).
    if (checked.kind === 'fatal') throw new OAuthError('invalid_request', checked.message);
    if (checked.kind === 'error') throw new OAuthError(checked.error as OAuthError['error'], checked.description);
    const requestUri = await this.pushed.push(client.id, { ...params, client_id: client.id });
    return { request_uri: requestUri, expires_in: PUSHED_REQUEST_TTL_SECONDS };
  }
}
