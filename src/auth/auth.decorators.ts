import { type ExecutionContext, SetMetadata, applyDecorators, createParamDecorator } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiOAuth2 } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiProblem, ApiProblems } from '../common/openapi';
import type { Acr } from './acr';
import type { AuthPrincipal } from './principal';
import type { Scope } from './scopes';

export const IS_PUBLIC_KEY = 'auth:isPublic';
export const ACCESS_KEY = 'auth:access';
export const ACR_KEY = 'auth:acr';
export const AT_ISSUER_KEY = 'auth:atIssuer';

/*
 * Every route declares who may call it in one decorator, on the handler or its controller (the handler's wins,
 * whole): `@Public()`, or `@Access({...})` naming the scopes, the people, whether clients' own tokens may call it
 * and whether it acts on the caller's own records. The application refuses to start while a route declares
 * neither, or an invalid rule (see RouteAccessCheck), naming its method and path; the bearer guard denies such a
 * route should one ever be reached.
 */

/** Who may call a protected route. */
export interface AccessRule {
  /** The scopes the access token must carry, every one; `'any'`: any valid token (a route that only says who calls). */
  readonly scopes: readonly [Scope, ...Scope[]] | 'any';
  /**
   * The people who may call it: those with one of these roles (read from the user directory on each call, so a
   * demotion takes effect at once; checked after the scopes, before validation, so a caller without the role
   * learns nothing about the body rules), or `'any'` signed-in person.
   */
  readonly people: readonly [string, ...string[]] | 'any';
  /**
   * The route acts on the caller's own records only (an administrator's reach: everyone's), and another person's
   * record answers 404, as one that does not exist. The handler enforces it (its repository calls take the caller's
   * OwnerScope, see callers.ts); the route inventory tries it. A write route open to `people: 'any'` must say so,
   * or the start stops.
   */
  readonly ownRecords?: true;
  /**
   * A client's own token (client-credentials grant, no user) may call it too, with the route's scopes: the
   * operator who allowed the client those scopes at registration has decided for it, so `people` applies to
   * people only. Without it such a token gets 403.
   */
  readonly clientTokens?: true;
}

/** Opts a route (or controller) out of the global bearer guard. */
export const Public = () => SetMetadata(IS_PUBLIC_KEY, true);

/** The one access declaration of a protected route (or of every route of a controller without its own). */
export function Access(rule: AccessRule) {
  const scopes = rule.scopes === 'any' ? [] : [...rule.scopes];
  // 403: a missing scope, a role the caller lacks, or a client's own token where a person's is needed.
  const mayForbid = rule.scopes !== 'any' || rule.people !== 'any' || !rule.clientTokens;
  return applyDecorators(
    SetMetadata(ACCESS_KEY, rule),
    ApiOAuth2(scopes, 'oauth2'),
    ApiBearerAuth('bearer'),
    ApiProblems(400, 401, ...(mayForbid ? [403] : [])),
    ...(rule.people === 'any' ? [] : [ApiExtension('x-roles', rule.people)]),
    ...(rule.ownRecords ? [ApiExtension('x-own-records', true)] : []),
    ...(rule.clientTokens ? [ApiExtension('x-client-credentials', true)] : []),
  );
}

/**
 * The sign-in level a person's token must carry for this route (its `acr` claim, see `acr.ts`). A token of a
 * weaker sign-in gets 401 with RFC 9470's challenge, `error="insufficient_user_authentication"` and the
 * `acr_values` to ask the authorization server for; the client sends the person through sign-in again with them.
 */
export function RequireAcr(level: Acr) {
  return applyDecorators(
    SetMetadata(ACR_KEY, level),
    ApiExtension('x-acr', level),
    ApiProblem(401, `No valid access token, or one of a sign-in weaker than ${level} (WWW-Authenticate: insufficient_user_authentication)`),
  );
}

/**
 * The route belongs to the authorization server (OpenID Connect's UserInfo): it is reached at the issuer's origin,
 * which a DPoP proof's `htu` names, not `AUDIENCE`'s.
 */
export const AtIssuer = () => SetMetadata(AT_ISSUER_KEY, true);

export type RequestWithPrincipal = Request & { principal?: AuthPrincipal };

/** The verified caller of the current request. */
export const Principal = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthPrincipal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('@Principal() used on a route without an authenticated caller');
  return principal;
});
