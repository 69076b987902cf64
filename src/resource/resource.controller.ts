import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse } from '@nestjs/swagger';
import { Access, Principal } from '../auth/auth.decorators';
import type { AuthPrincipal } from '../auth/principal';
import { NoQueryParams } from '../common/validation';

export interface ResourceResponse {
  data: { sub: string; client_id: string; scope: string; message: string };
}

@Controller('api/resource')
export class ResourceController {
  @Get()
  @Access({ scopes: 'any', people: 'any', clientTokens: true })
  @ApiOkResponse({
    description: 'Who called: the token subject, its client and scopes',
    schema: {
      type: 'object',
      required: ['data'],
      properties: {
        data: {
          type: 'object',
          required: ['sub', 'client_id', 'scope', 'message'],
          properties: { sub: { type: 'string' }, client_id: { type: 'string' }, scope: { type: 'string' }, message: { type: 'string' } },
        },
      },
    },
  })
  get(@Principal() principal: AuthPrincipal, @NoQueryParams() _query: unknown): ResourceResponse {
    return {
      data: {
        sub: principal.sub,
        client_id: principal.clientId,
        scope: principal.scope,
        message: 'You have accessed a protected resource.',
      },
    };
  }
}
