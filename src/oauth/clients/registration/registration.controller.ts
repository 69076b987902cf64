import { auditContextOf } from '../../../audit/audit-events';
import {
  type ArgumentsHost,
  Body,
  Catch,
  Controller,
  Delete,
  type ExceptionFilter,
  Get,
  Header,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Put,
  Req,
  UseFilters,
} from '@nestjs/common';
import { ApiBody, ApiParam, ApiResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../../auth/auth.decorators';
import { ApiProblems } from '../../../common/openapi';
import { RateLimit } from '../../../rate-limit/rate-limit';
import { GRANT_TYPES, TOKEN_EXCHANGE_GRANT } from '../../entities/client.entity';
import { ASSERTION_SIGNING_ALGS } from '../../client-auth/client-jwks';
import { safeDescription } from '../../oauth-error';
import { RegistrationError } from './registration-metadata';
import { type RegisteredClient, RegistrationService } from './registration.service';

/** Answers a {@link RegistrationError} as RFC 7591 3.2.2 / RFC 7592 want it. */
@Catch(RegistrationError)
export class RegistrationErrorFilter implements ExceptionFilter<RegistrationError> {
  catch(exception: RegistrationError, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    res.status(exception.status).setHeader('Cache-Control', 'no-store');
    if (exception.status === 401) res.setHeader('WWW-Authenticate', 'Bearer error="invalid_token"');
    res.json({ error: exception.error, error_description: safeDescription(exception.message) });
  }
}

const BEARER = /^bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i;

/** The token of an `Authorization: Bearer` header (initial or registration access token); a malformed one is refused. */
function bearerOf(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = BEARER.exec(header);
  if (!match) throw new RegistrationError(401, 'invalid_token', 'The Authorization header must be Bearer <token>.');
  return match[1];
}

const METADATA_PROPERTIES: Record<string, SchemaObject> = {
  redirect_uris: { type: 'array', items: { type: 'string', format: 'uri' }, description: 'https, or http on a loopback address' },
  token_endpoint_auth_method: { type: 'string', enum: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] },
  jwks: {
    type: 'object',
    required: ['keys'],
    properties: { keys: { type: 'array', maxItems: 10, items: { type: 'object' } } },
    description: 'private_key_jwt: the public keys (RSA, EC P-256, OKP Ed25519; no private members); not with jwks_uri',
  },
  jwks_uri: { type: 'string', format: 'uri', description: 'private_key_jwt: an https URL of the public keys; not with jwks' },
  token_endpoint_auth_signing_alg: { type: 'string', enum: [...ASSERTION_SIGNING_ALGS], description: 'private_key_jwt: the one algorithm' },
  grant_types: {
    type: 'array',
    items: { type: 'string', enum: [...GRANT_TYPES] },
    description: `client_credentials is never registered; ${TOKEN_EXCHANGE_GRANT} only by a confidential client (with the initial access token)`,
  },
  response_types: { type: 'array', items: { type: 'string', enum: ['code'] } },
  client_name: { type: 'string', maxLength: 100 },
  scope: { type: 'string', description: 'space-separated; every scope when omitted' },
  post_logout_redirect_uris: {
    type: 'array',
    items: { type: 'string', format: 'uri' },
    description: 'OpenID Connect RP-Initiated Logout: https, or http on a loopback address',
  },
};

const CLIENT_INFORMATION: SchemaObject = {
  type: 'object',
  required: ['client_id', 'client_id_issued_at', 'registration_access_token', 'registration_client_uri', 'token_endpoint_auth_method'],
  properties: {
    client_id: { type: 'string' },
    client_secret: { type: 'string', description: 'confidential clients, at registration only (stored as a hash)' },
    client_id_issued_at: { type: 'integer' },
    client_secret_expires_at: { type: 'integer', enum: [0] },
    registration_access_token: { type: 'string' },
    registration_client_uri: { type: 'string', format: 'uri' },
    ...METADATA_PROPERTIES,
  },
};

/** The id in a registration_client_uri. */
const CLIENT_ID_PARAM = ApiParam({ name: 'clientId', required: true, schema: { type: 'string', maxLength: 64 } });

const ERROR = (status: number, description: string) =>
  ApiResponse({
    status,
    description,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['error', 'error_description'],
          properties: { error: { type: 'string' }, error_description: { type: 'string' } },
        },
      },
    },
  });

/**
 * Dynamic client registration (RFC 7591) at `POST /register` and client configuration (RFC 7592) at
 * `/register/{clientId}`; 404 unless `REGISTRATION` enables it. Public to the bearer guard: these routes take the
 * registration's own tokens, not API access tokens.
 */
@Public()
@ApiTags('registration')
@Controller('register')
@UseFilters(RegistrationErrorFilter)
@ApiProblems(404, 413, 429, 503)
@ApiResponse({ status: 400, description: 'RFC 7591 invalid_redirect_uri or invalid_client_metadata' })
export class RegistrationController {
  constructor(private readonly registration: RegistrationService) {}

  @Post()
  @RateLimit('register')
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @ApiBody({ required: true, schema: { type: 'object', properties: METADATA_PROPERTIES } })
  @ApiResponse({
    status: 201,
    description: 'The client information (RFC 7591 3.2.1)',
    content: { 'application/json': { schema: CLIENT_INFORMATION } },
  })
  @ERROR(401, 'invalid_token: no or a wrong initial access token where one is needed')
  register(@Req() req: Request, @Body() body: unknown): Promise<RegisteredClient> {
    this.enabled();
    jsonOnly(req);
    return this.registration.register(body, bearerOf(req), auditContextOf(req));
  }

  @Get(':clientId')
  @CLIENT_ID_PARAM
  @RateLimit('register')
  @Header('Cache-Control', 'no-store')
  @ApiResponse({
    status: 200,
    description: 'The client information (RFC 7592 3)',
    content: { 'application/json': { schema: CLIENT_INFORMATION } },
  })
  @ERROR(401, "invalid_token: the registration access token is missing or not this client's")
  read(@Req() req: Request, @Param('clientId') clientId: string): Promise<RegisteredClient> {
    this.enabled();
    return this.registration.read(clientId, bearerOf(req));
  }

  @Put(':clientId')
  @CLIENT_ID_PARAM
  @RateLimit('register')
  @Header('Cache-Control', 'no-store')
  @ApiBody({
    required: true,
    schema: { type: 'object', required: ['client_id'], properties: { client_id: { type: 'string' }, ...METADATA_PROPERTIES } },
  })
  @ApiResponse({
    status: 200,
    description: 'The new client information (RFC 7592 2.2)',
    content: { 'application/json': { schema: CLIENT_INFORMATION } },
  })
  @ERROR(401, "invalid_token: the registration access token is missing or not this client's")
  replace(@Req() req: Request, @Param('clientId') clientId: string, @Body() body: unknown): Promise<RegisteredClient> {
    this.enabled();
    jsonOnly(req);
    return this.registration.replace(clientId, body, bearerOf(req), auditContextOf(req));
  }

  @Delete(':clientId')
  @CLIENT_ID_PARAM
  @RateLimit('register')
  @HttpCode(204)
  @ApiResponse({ status: 204, description: 'Deleted with its grants and tokens (RFC 7592 2.3)' })
  @ERROR(401, "invalid_token: the registration access token is missing or not this client's")
  async remove(@Req() req: Request, @Param('clientId') clientId: string): Promise<void> {
    this.enabled();
    await this.registration.remove(clientId, bearerOf(req), auditContextOf(req));
  }

  private enabled(): void {
    if (!this.registration.enabled) throw new NotFoundException('Dynamic client registration is not enabled.');
  }
}

function jsonOnly(req: Request): void {
  if (!req.is('application/json')) throw new RegistrationError(400, 'invalid_client_metadata', 'The body must be application/json.');
}
