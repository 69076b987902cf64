import { Controller, Get, Header, NotFoundException, Req } from '@nestjs/common';
import { ApiOkResponse, ApiParam } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiProblems } from '../common/openapi';
import { NoQueryParams } from '../common/validation';
import { AppConfig } from '../config/app-config';
import { Public } from './auth.decorators';
import { resourceScopes } from './scopes';
import { DpopConfig } from './dpop.config';
import { DPOP_ALGS } from './dpop-proofs.service';

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: string[];
  resource_documentation: string;
  /** RFC 9728 2: the DPoP proof algorithms accepted, and whether every token must be bound to a key. */
  dpop_signing_alg_values_supported: string[];
  dpop_bound_access_tokens_required: boolean;
}

/**
 * RFC 9728 protected-resource metadata of the resource API: its identifier (the `aud` its tokens must carry,
 * `AUDIENCE`), the authorization server that issues them (this service's issuer), the scopes its routes take (not
 * `offline_access`, which only the authorization server's metadata lists) and how a token is sent (the
 * `Authorization` header only). Every Bearer challenge of the API points here.
 */
@Public()
@ApiProblems(400, 404)
@Controller()
export class ProtectedResourceMetadataController {
  constructor(
    private readonly config: AppConfig,
    private readonly dpop: DpopConfig,
  ) {}

  @Get(AppConfig.RESOURCE_METADATA_PATH)
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOkResponse({ description: 'RFC 9728 metadata of the resource API (when AUDIENCE has no path)' })
  metadata(@NoQueryParams() _query: unknown): ProtectedResourceMetadata {
    if (this.config.audiencePath) throw new NotFoundException('The metadata is at the path of the resource (AUDIENCE).');
    return this.document();
  }

  /** For an `AUDIENCE` with a path (`https://host/api` -> `/.well-known/oauth-protected-resource/api`). */
  @Get(`${AppConfig.RESOURCE_METADATA_PATH}/*path`)
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOkResponse({ description: 'RFC 9728 metadata of the resource AUDIENCE names' })
  @ApiParam({ name: 'path', schema: { type: 'string' }, description: 'the path of AUDIENCE (e.g. api for https://host/api)' })
  @ApiProblems(404)
  metadataOfPath(@Req() req: Request, @NoQueryParams() _query: unknown): ProtectedResourceMetadata {
    const path = req.path.slice(AppConfig.RESOURCE_METADATA_PATH.length);
    if (!this.config.audiencePath || path !== this.config.audiencePath) throw new NotFoundException('No protected resource has this path.');
    return this.document();
  }

  private document(): ProtectedResourceMetadata {
    return {
      resource: this.config.audience,
      authorization_servers: [this.config.issuer],
      scopes_supported: resourceScopes(),
      bearer_methods_supported: ['header'],
      resource_documentation: `${this.config.issuer}/docs`,
      dpop_signing_alg_values_supported: [...DPOP_ALGS],
      dpop_bound_access_tokens_required: this.dpop.required,
    };
  }
}
