import { Controller, Get } from '@nestjs/common';
import { AnyScope, Principal } from '../auth/auth.decorators';
import type { AuthPrincipal } from '../auth/principal';
import { NoQueryParams } from '../common/validation';

export interface ResourceResponse {
  data: { sub: string; client_id: string; scope: string; message: string };
}

@Controller('api/resource')
export class ResourceController {
  @Get()
  @AnyScope()
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
