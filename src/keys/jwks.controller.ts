import { Controller, Get, Header } from '@nestjs/common';
import type { JWK } from 'jose';
import { NoQueryParams } from '../common/validation';
import { Public } from '../auth/auth.decorators';
import { SigningKeysService } from './signing-keys.service';

@Public()
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keys: SigningKeysService) {}

  @Get('jwks.json')
  @Header('Cache-Control', 'public, max-age=60')
  jwks(@NoQueryParams() _query: unknown): { keys: JWK[] } {
    return this.keys.jwks();
  }
}
