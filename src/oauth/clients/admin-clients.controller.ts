import { type AuditBy, AuditedBy } from '../../audit/audit-events';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Access } from '../../auth/auth.decorators';
import { DomainError } from '../../common/domain-error';
import { ApiProblems } from '../../common/openapi';
import { type Page, PageQueryDto } from '../../common/pagination';
import { NoQueryParams } from '../../common/validation';
import { ClientsService } from './clients.service';
import { type ClientView, InvalidClientInputError } from './client-metadata';
import { clientView } from './client-view';
import { ClientsError } from './clients.errors';
import { ClientsScope } from './clients.scopes';
import { CreateClientDto, UpdateClientDto } from './admin-client.dto';
import { GrantRevocationService } from '../grants/grant-revocation.service';

const CLIENT_ID = ApiParam({ name: 'clientId', schema: { type: 'string', maxLength: 64 } });

/** What the clients service refuses, as the API answers it: the CLI's option names become the JSON fields. */
/** The `private_key_jwt` keys of a request body, as the clients service takes them. */
function keysOf(body: Pick<CreateClientDto, 'jwks' | 'jwks_uri' | 'token_endpoint_auth_signing_alg'>) {
  return {
    jwks: body.jwks,
    jwksUri: body.jwks_uri,
    tokenEndpointAuthSigningAlg: body.token_endpoint_auth_signing_alg,
  };
}

async function checked<T>(change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (!(error instanceof InvalidClientInputError)) throw error;
    if (error.message.startsWith('no client with id')) throw new DomainError(ClientsError.NotFound, 'There is no client with this id.');
    const message = error.message.replace(/--([a-z-]+)/g, (_, flag: string) => flag.replace(/-/g, '_'));
    throw new DomainError(ClientsError.InvalidClient, message);
  }
}

/**
 * The admin API for OAuth clients: what `client:create` / `client:update` do, over HTTP, for administrators
 * with a token carrying `clients:admin`. A client secret is shown once, at creation and at rotation.
 */
@ApiTags('admin')
@ApiProblems(503)
@Controller('admin/clients')
@Access({ scopes: [ClientsScope.admin], people: ['admin'] })
export class AdminClientsController {
  constructor(
    private readonly clients: ClientsService,
    private readonly lifecycle: GrantRevocationService,
  ) {}

  @Get()
  @ApiOkResponse({ description: 'A page of clients, oldest first' })
  list(@Query() query: PageQueryDto): Promise<Page<ClientView>> {
    return this.clients.list(query.limit, query.offset);
  }

  @Get(':clientId')
  @CLIENT_ID
  @ApiOkResponse({ description: 'The client (never its secret)' })
  @ApiProblems(404)
  async get(@Param('clientId') clientId: string, @NoQueryParams() _query: unknown): Promise<ClientView> {
    const client = await this.clients.findRegistered(clientId);
    if (!client) throw new DomainError(ClientsError.NotFound, 'There is no client with this id.');
    return clientView(client);
  }

  @Post()
  @ApiCreatedResponse({
    description: 'The new client with its client_secret (confidential clients), shown this once; Location: /admin/clients/{clientId}',
  })
  @ApiProblems(413, 415)
  async create(
    @Body() body: CreateClientDto,
    @NoQueryParams() _query: unknown,
    @Res({ passthrough: true }) res: Response,
    @AuditedBy() by: AuditBy,
  ): Promise<ClientView> {
    const client = await checked(() =>
      this.clients.create(
        {
          name: body.name,
          redirectUris: body.redirect_uris ?? [],
          isPublic: body.public,
          trusted: body.trusted,
          scope: body.scope,
          grantTypes: body.grant_types,
          refreshGraceSeconds: body.refresh_grace_seconds,
          resources: body.resources,
          postLogoutRedirectUris: body.post_logout_redirect_uris,
          tokenEndpointAuthMethod: body.token_endpoint_auth_method,
          minimumAcr: body.minimum_acr,
          requirePushedRequests: body.require_pushed_authorization_requests,
          dpopBoundAccessTokens: body.dpop_bound_access_tokens,
          ...keysOf(body),
        },
        by,
      ),
    );
    res.location(`/admin/clients/${encodeURIComponent(client.client_id)}`);
    return client;
  }

  @Put(':clientId')
  @CLIENT_ID
  @ApiOkResponse({ description: 'The changed client' })
  @ApiProblems(404, 413, 415)
  update(
    @Param('clientId') clientId: string,
    @Body() body: UpdateClientDto,
    @NoQueryParams() _query: unknown,
    @AuditedBy() by: AuditBy,
  ): Promise<ClientView> {
    return checked(() =>
      this.clients.update(
        clientId,
        {
          scope: body.scope,
          addScope: body.add_scope,
          removeScope: body.remove_scope,
          redirectUris: body.redirect_uris,
          postLogoutRedirectUris: body.post_logout_redirect_uris,
          tokenEndpointAuthMethod: body.token_endpoint_auth_method,
          ...keysOf(body),
        },
        by,
      ),
    );
  }

  @Post(':clientId/secret')
  @CLIENT_ID
  @HttpCode(200)
  @ApiOkResponse({
    description:
      'The client with its new client_secret, shown this once; the old secret and the client-credentials tokens it obtained stop working',
  })
  @ApiProblems(404)
  async rotateSecret(@Param('clientId') clientId: string, @NoQueryParams() _query: unknown, @AuditedBy() by: AuditBy): Promise<ClientView> {
    const client = await checked(() => this.clients.rotateSecret(clientId, by));
    // A secret is replaced when it leaked: what it obtained goes with it.
    await this.lifecycle.revokeClientCredentialsTokens(clientId);
    return client;
  }

  @Delete(':clientId')
  @CLIENT_ID
  @HttpCode(204)
  @ApiNoContentResponse({ description: 'Deleted with its grants, codes, refresh tokens and consents; its access tokens stop working' })
  @ApiProblems(404)
  async delete(@Param('clientId') clientId: string, @NoQueryParams() _query: unknown, @AuditedBy() by: AuditBy): Promise<void> {
    if (!(await this.clients.findRegistered(clientId))) throw new DomainError(ClientsError.NotFound, 'There is no client with this id.');
    await this.lifecycle.revokeClientGrants(clientId);
    await this.clients.remove(clientId, by);
  }
}
