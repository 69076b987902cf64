import { Controller, Header, HttpCode, Post, UseFilters, UseGuards } from '@nestjs/common';
import { Public } from '../../../auth/auth.decorators';
import { ApiOAuthEndpoint } from '../../../common/openapi';
import { AuthenticatedClient, CLIENT_ASSERTION_PROPERTIES, ClientAuthGuard, OAuthForm } from '../../client-auth/client-auth.guard';
import type { Client } from '../../entities/client.entity';
import { type Introspection, IntrospectionService } from './introspection.service';
import { OAuthError } from '../../oauth-error';
import { OAuthErrorFilter } from '../../oauth-error.filter';

/** The introspection endpoint (RFC 7662), for confidential clients and their own tokens. */
@Public()
@Controller('introspect')
@UseFilters(OAuthErrorFilter)
export class IntrospectionController {
  constructor(private readonly introspection: IntrospectionService) {}

  @Post()
  @ApiOAuthEndpoint({
    properties: {
      token: { type: 'string' },
      token_type_hint: { type: 'string', enum: ['refresh_token', 'access_token'] },
      client_id: { type: 'string' },
      client_secret: { type: 'string' },
      ...CLIENT_ASSERTION_PROPERTIES,
    },
    required: ['token'],
    ok: {
      description: 'RFC 7662: `{"active": false}`, or the claims of an active token of the calling client',
      schema: {
        type: 'object',
        required: ['active'],
        properties: {
          active: { type: 'boolean' },
          scope: { type: 'string' },
          client_id: { type: 'string' },
          sub: { type: 'string' },
          exp: { type: 'integer' },
          iat: { type: 'integer' },
          iss: { type: 'string' },
          aud: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'the resources the token is for' },
          token_type: { type: 'string', enum: ['Bearer', 'DPoP', 'refresh_token'] },
          cnf: {
            type: 'object',
            required: ['jkt'],
            properties: { jkt: { type: 'string' } },
            description: 'RFC 9449 6.2: the thumbprint of the key the token is bound to',
          },
          act: {
            type: 'object',
            required: ['sub'],
            properties: {
              sub: { type: 'string' },
              client_id: { type: 'string' },
              act: { type: 'object', description: 'the actor before' },
            },
            description: 'RFC 8693 4.1: who acts for sub (a token from a token exchange), the earlier actors nested',
          },
          acr: { type: 'string', description: "RFC 9470 6: the level of the person's sign-in" },
          auth_time: { type: 'integer', description: 'RFC 9470 6: when the person signed in (seconds since the epoch)' },
        },
      },
    },
  })
  @UseGuards(ClientAuthGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  introspect(@AuthenticatedClient() client: Client, @OAuthForm() form: Record<string, string>): Promise<Introspection> {
    if (client.isPublic) throw new OAuthError('invalid_client', 'Public clients cannot introspect tokens.');
    if (!form.token) throw new OAuthError('invalid_request', 'token is required.');
    return this.introspection.introspect(client, form.token);
  }
}
