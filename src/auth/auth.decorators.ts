import { type ExecutionContext, SetMetadata, applyDecorators, createParamDecorator } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiOAuth2 } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiProblems } from '../common/openapi';
import type { AuthPrincipal } from './principal';
import type { Scope } from './scopes';

export const IS_PUBLIC_KEY = 'auth:isPublic';
export const SCOPES_KEY = 'auth:scopes';
export const ANY_SCOPE_KEY = 'auth:anyScope';
export const ROLES_KEY = 'auth:roles';
export const CLIENT_TOKENS_KEY = 'auth:clientTokens';
export const ANY_PERSON_KEY = 'auth:anyPerson';

/*
 * Every route declares who may call it, in exactly one of three ways: `@Public()`, `@Scopes(...)` with at least
 * one scope, or `@AnyScope()`; a protected route that writes (POST, PUT, PATCH, DELETE) also says whose call it
 * is: `@Roles(...)`, or `@AnyPerson()` when any signed-in person may (on their own records). The application
 * refuses to start while a route declares none of them (or an empty `@Scopes()`), naming its method and path, and
 * the bearer guard denies such a route should one ever be reached.
 */

/** Opts a route (or controller) out of the global bearer guard. */
export const Public = () => SetMetadata(IS_PUBLIC_KEY, true);

/** The scopes a route needs: the access token must carry every one of them. */
export function Scopes(...scopes: [Scope, ...Scope[]]) {
  return applyDecorators(SetMetadata(SCOPES_KEY, scopes), ApiOAuth2(scopes, 'oauth2'), ApiBearerAuth('bearer'), ApiProblems(400, 401, 403));
}

/** Any valid access token, whatever its scopes (e.g. a route that only tells the caller who it is). */
export function AnyScope() {
  return applyDecorators(SetMetadata(ANY_SCOPE_KEY, true), ApiOAuth2([], 'oauth2'), ApiBearerAuth('bearer'), ApiProblems(400, 401));
}

/**
 * The roles allowed to call a route (checked after the scopes, before validation, so that a caller without the
 * role learns nothing about the body rules). Roles are read from the user directory on each call, so a demotion
 * takes effect at once.
 */
export function Roles(...roles: [string, ...string[]]) {
  return applyDecorators(SetMetadata(ROLES_KEY, roles), ApiExtension('x-roles', roles), ApiProblems(403));
}

/**
 * Lets a client that obtained a token for itself (client-credentials grant, no user) call the route too, when its
 * token has the route's scopes. Without it such a token gets 403: every other route acts for a signed-in person
 * ("own records", a user's role). On a route that also has `@Roles()`, the roles apply to people only: the
 * operator who allowed the client those scopes at registration has decided for it.
 */
export function AcceptClientTokens() {
  return applyDecorators(SetMetadata(CLIENT_TOKENS_KEY, true), ApiExtension('x-client-credentials', true));
}

export type RequestWithPrincipal = Request & { principal?: AuthPrincipal };

/** The verified caller of the current request. */
export const Principal = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthPrincipal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('@Principal() used on a route without an authenticated caller');
  return principal;
});

/**
 * Any signed-in person whose token has the route's scopes may call this write route; the handler decides whose
 * records it acts on (the caller's own, or any for an administrator). The explicit alternative to `@Roles(...)`
 * that every protected write route needs: forgetting both stops the start.
 */
export function AnyPerson() {
  return applyDecorators(SetMetadata(ANY_PERSON_KEY, true), ApiExtension('x-any-person', true));
}
