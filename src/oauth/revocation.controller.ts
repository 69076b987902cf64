import { type AuditContext, Origin } from '../audit/audit-events';
import { Controller, Header, HttpCode, Post, UseFilters, UseGuards } from '@nestjs/common';
import { Public } from '../auth/auth.decorators';
import { ApiOAuthEndpoint } from '../common/openapi';
import { AuthenticatedClient, ClientAuthGuard, OAuthForm } from './client-auth.guard';
import type { Client } from './entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthError } from './oauth-error';
import { OAuthErrorFilter } from './oauth-error.filter';
import { JWT_BEARER_ASSERTION_TYPE } from './client-assertion';

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
      client_assertion_type: { type: 'string', enum: [JWT_BEARER_ASSERTION_TYPE], description: 'private_key_jwt (RFC 7523 2.2)' },
      client_assertion: {
        type: 'string',
        description:
          'private_key_jwt: a JWT signed by a key of the client (RS256, ES256 or EdDSA/Ed25519); iss = sub = client_id, aud the issuer or this endpoint, exp at most 5 minutes ahead, jti used once',
      },
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
