import { type ExecutionContext, SetMetadata, applyDecorators, createParamDecorator } from '@nestjs/common';
import { ApiBearerAuth, ApiOAuth2 } from '@nestjs/swagger';
import { ApiProblems } from '../common/openapi';
import type { Request } from 'express';
import type { AuthPrincipal } from './principal';
import type { Scope } from './scopes';

export const IS_PUBLIC_KEY = 'auth:isPublic';
export const SCOPES_KEY = 'auth:scopes';

/** Opts a route (or controller) out of the global bearer guard. */
export const Public = () => SetMetadata(IS_PUBLIC_KEY, true);

/** Declares the scopes a route needs; `@Scopes()` with none means "any valid access token". */
export function Scopes(...scopes: Scope[]) {
  return applyDecorators(
    SetMetadata(SCOPES_KEY, scopes),
    ApiOAuth2(scopes, 'oauth2'),
    ApiBearerAuth('bearer'),
    ApiProblems(400, 401, 403),
  );
}

export type RequestWithPrincipal = Request & { principal?: AuthPrincipal };

/** The verified caller of the current request. */
export const Principal = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthPrincipal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('@Principal() used on a route without an authenticated caller');
  return principal;
});
