import { type AuditContext, Origin } from '../../audit/audit-events';
import { Controller, Header, HttpCode, Post, UseFilters, UseGuards } from '@nestjs/common';
import { Public } from '../../auth/auth.decorators';
import { ApiOAuthEndpoint } from '../../common/openapi';
import { AuthenticatedClient, CLIENT_ASSERTION_PROPERTIES, ClientAuthGuard, OAuthForm } from '../client-auth/client-auth.guard';
import type { Client } from '../entities/client.entity';
import { GrantRevocationService } from '../grants/grant-revocation.service';
import { OAuthError } from '../oauth-error';
import { OAuthErrorFilter } from '../oauth-error.filter';

/** The revocation endpoint (RFC 7009). */
@Public()
@Controller('revoke')
@UseFilters(OAuthErrorFilter)
export class RevocationController {
  constructor(private readonly revocation: GrantRevocationService) {}

  @Post()
  @ApiOAuthEndpoint({
    properties: {
      token: { type: 'string', description: 'a refresh or access token of the client' },
      token_type_hint: { type: 'string', enum: ['refresh_token', 'access_token'] },
      client_id: { type: 'string' },
      client_secret: { type: 'string' },
      ...CLIENT_ASSERTION_PROPERTIES,
    },
    required: ['token'],
    ok: { description: 'Revoked, or nothing to revoke (RFC 7009 2.2): an empty body' },
  })
  @UseGuards(ClientAuthGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  async revoke(
    @AuthenticatedClient() client: Client,
    @OAuthForm() form: Record<string, string>,
    @Origin() origin: AuditContext,
  ): Promise<void> {
    if (!form.token) throw new OAuthError('invalid_request', 'token is required.');
    await this.revocation.revokeToken(client, form.token, origin);
  }
}
