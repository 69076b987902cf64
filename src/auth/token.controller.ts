import { Controller, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { RateLimit } from '../common/rate-limit/rate-limit';
import { Public } from './auth.decorators';
import { ClientsService } from './clients.service';
import { GrantsService } from './grants.service';
import { OAuthError } from './oauth-error';

/** Reads a form body: only `application/x-www-form-urlencoded`, and no parameter twice. */
function formBody(req: Request): Record<string, string> {
  if (!req.is('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded.');
  }
  const body = (req.body ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) {
    if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} was sent more than once.`);
    out[name] = value;
  }
  return out;
}

function noStore(res: Response): Response {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  return res;
}

/** The token (RFC 6749), revocation (RFC 7009) and introspection (RFC 7662) endpoints. */
@Public()
@Controller()
export class TokenController {
  constructor(
    private readonly clients: ClientsService,
    private readonly grants: GrantsService,
  ) {}

  @Post('token')
  @RateLimit('token')
  async token(@Req() req: Request, @Res() res: Response): Promise<void> {
    const body = formBody(req);
    const client = await this.clients.authenticate(req, body);
    let tokens;
    switch (body.grant_type) {
      case undefined:
      case '':
        throw new OAuthError('invalid_request', 'grant_type is required.');
      case 'authorization_code':
        tokens = await this.grants.exchangeCode(client, {
          code: body.code,
          redirectUri: body.redirect_uri,
          codeVerifier: body.code_verifier,
        });
        break;
      case 'refresh_token':
        tokens = await this.grants.refresh(client, body.refresh_token, body.scope);
        break;
      default:
        throw new OAuthError('unsupported_grant_type', 'Supported: authorization_code, refresh_token.');
    }
    noStore(res).status(200).json(tokens);
  }

  @Post('revoke')
  async revoke(@Req() req: Request, @Res() res: Response): Promise<void> {
    const body = formBody(req);
    const client = await this.clients.authenticate(req, body);
    if (!body.token) throw new OAuthError('invalid_request', 'token is required.');
    await this.grants.revokeToken(client, body.token);
    noStore(res).status(200).end();
  }

  @Post('introspect')
  async introspect(@Req() req: Request, @Res() res: Response): Promise<void> {
    const body = formBody(req);
    const client = await this.clients.authenticate(req, body);
    if (client.isPublic) throw new OAuthError('invalid_client', 'Public clients cannot introspect tokens.');
    if (!body.token) throw new OAuthError('invalid_request', 'token is required.');
    noStore(res).status(200).json(await this.grants.introspect(client, body.token));
  }
}
