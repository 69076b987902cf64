import { ApiProblems } from '../../common/openapi';
import { Controller, Get, Header } from '@nestjs/common';
import type { JWK } from 'jose';
import { NoQueryParams } from '../../common/validation';
import { Public } from '../../auth/auth.decorators';
import { SigningKeysService } from '../../keys/signing-keys.service';

@Public()
// A query parameter of any name is 400 here (none is taken).
@ApiProblems(400)
@Controller('.well-known')
export class JwksController {
  constructor(private readonly keys: SigningKeysService) {}

  @Get('jwks.json')
  @Header('Cache-Control', 'public, max-age=60')
  jwks(@NoQueryParams() _query: unknown): { keys: JWK[] } {
    return this.keys.jwks();
  }
}
