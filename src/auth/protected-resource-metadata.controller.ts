import { Controller, Get, Header } from '@nestjs/common';
import { ApiProblems } from '../common/openapi';
import { NoQueryParams } from '../common/validation';
import { AppConfig } from '../config/app-config';
import { Public } from './auth.decorators';
import { allScopes } from './scopes';

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: string[];
  resource_documentation: string;
}

/**
 * RFC 9728 protected-resource metadata of the resource API: its identifier (the `aud` its tokens must carry,
 * `AUDIENCE`), the authorization server that issues them (this service's issuer), the scopes its routes take and
 * how a token is sent (the `Authorization` header only). Every Bearer challenge of the API points here.
 */
@Public()
@ApiProblems(400)
@Controller()
export class ProtectedResourceMetadataController {
  constructor(private readonly config: AppConfig) {}

  @Get(AppConfig.RESOURCE_METADATA_PATH)
  @Header('Cache-Control', 'public, max-age=300')
  metadata(@NoQueryParams() _query: unknown): ProtectedResourceMetadata {
    return {
      resource: this.config.audience,
      authorization_servers: [this.config.issuer],
      scopes_supported: allScopes(),
      bearer_methods_supported: ['header'],
      resource_documentation: `${this.config.issuer}/docs`,
    };
  }
}
