import { type AuditContext, Origin } from '../../audit/audit-events';
import { Controller, Header, HttpCode, Post, UseFilters, UseGuards } from '@nestjs/common';
import { Public } from '../../auth/auth.decorators';
import { ApiOAuthEndpoint } from '../../common/openapi';
import { RateLimit } from '../../rate-limit/rate-limit';
import { namedClient } from '../client-auth/named-client';
import { AuthenticatedClient, CLIENT_ASSERTION_PROPERTIES, ClientAuthGuard, OAuthForm } from '../client-auth/client-auth.guard';
import { type DeviceAuthorizationResponse, DeviceAuthorizationService } from '../device/device-authorization.service';
import type { Client } from '../entities/client.entity';
import { OAuthErrorFilter } from '../oauth-error.filter';

/**
 * The device authorization endpoint (RFC 8628 3.1): a client on a device without a browser (public, with its
 * `client_id`, or confidential, authenticated as at /token) asks for a device code and a user code, shows the
 * person the code and where to enter it, and polls /token with the device code.
 */
@Public()
@Controller('device_authorization')
@UseFilters(OAuthErrorFilter)
export class DeviceAuthorizationController {
  constructor(private readonly device: DeviceAuthorizationService) {}

  @Post()
  @ApiOAuthEndpoint({
    properties: {
      client_id: { type: 'string', description: 'public clients and client_secret_post' },
      scope: { type: 'string', description: "a subset of the client's scopes (those less OpenID Connect's when omitted); space-separated" },
      resource: {
        type: 'array',
        items: { type: 'string', format: 'uri' },
        description: 'RFC 8707: the resources the tokens are for (repeatable)',
      },
      client_secret: { type: 'string', description: 'client_secret_post' },
      ...CLIENT_ASSERTION_PROPERTIES,
    },
    required: [],
    ok: {
      description: 'RFC 8628 3.2: the codes, where the person enters the user code, their lifetime and the polling interval',
      schema: {
        type: 'object',
        required: ['device_code', 'user_code', 'verification_uri', 'verification_uri_complete', 'expires_in', 'interval'],
        properties: {
          device_code: { type: 'string' },
          user_code: { type: 'string', description: 'eight letters, shown as XXXX-XXXX' },
          verification_uri: { type: 'string', format: 'uri' },
          verification_uri_complete: { type: 'string', format: 'uri' },
          expires_in: { type: 'integer' },
          interval: { type: 'integer' },
        },
      },
    },
    errorCodes: ['invalid_request', 'invalid_scope', 'invalid_target', 'unauthorized_client'],
    rateLimited: true,
  })
  // Decorators apply bottom-up, so the rate limit is checked before the client is authenticated.
  @UseGuards(ClientAuthGuard)
  @RateLimit('token', namedClient)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  authorize(
    @AuthenticatedClient() client: Client,
    @OAuthForm() form: Record<string, string>,
    @Origin() origin: AuditContext,
  ): Promise<DeviceAuthorizationResponse> {
    return this.device.start(client, form.scope, form.resource, origin);
  }
}
