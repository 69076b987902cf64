import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { HttpProblemError } from '../common/renderable-error';
import { AccessTokenService } from './access-token.service';
import { IS_PUBLIC_KEY, type RequestWithPrincipal, SCOPES_KEY } from './auth.decorators';

const BEARER = /^bearer(?:[ \t]+(.*))?$/i;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

function has(container: unknown, key: string): boolean {
  return typeof container === 'object' && container !== null && Object.hasOwn(container, key);
}

/**
 * The global guard of the resource server (RFC 6750): every route needs a valid bearer token unless it is marked
 * `@Public()`. Only the Authorization header is read; a token in the query or body alone is ignored.
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: AccessTokenService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets)) return true;
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();

    const header = req.headers.authorization;
    const match = header === undefined ? null : BEARER.exec(header.trim());
    if (!match) {
      throw new HttpProblemError(401, 'unauthorized', 'An access token is required.', {
        'WWW-Authenticate': 'Bearer realm="api"',
      });
    }
    const token = match[1]?.trim();
    if (!token) {
      throw invalidRequest('The Authorization header names the Bearer scheme but carries no token.');
    }
    if (has(req.query, 'access_token') || has(req.body, 'access_token')) {
      throw invalidRequest('The access token must be sent in one way only.');
    }
    if (!B64TOKEN.test(token)) throw invalidToken();

    try {
      req.principal = await this.tokens.verify(token);
    } catch {
      throw invalidToken();
    }

    const needed = this.reflector.getAllAndOverride<string[] | undefined>(SCOPES_KEY, targets) ?? [];
    const missing = needed.filter((scope) => !req.principal!.scopes.has(scope));
    if (missing.length) {
      throw new HttpProblemError(403, 'insufficient-scope', `This request needs the scope ${needed.join(' ')}.`, {
        'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${needed.join(' ')}"`,
      });
    }
    return true;
  }
}

function invalidRequest(detail: string): HttpProblemError {
  return new HttpProblemError(400, 'invalid-request', detail, { 'WWW-Authenticate': 'Bearer error="invalid_request"' });
}

function invalidToken(): HttpProblemError {
  return new HttpProblemError(401, 'invalid-token', 'The access token is invalid, expired or revoked.', {
    'WWW-Authenticate': 'Bearer error="invalid_token"',
  });
}
