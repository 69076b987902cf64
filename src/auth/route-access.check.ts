import { Get, Injectable, type OnApplicationBootstrap, type Type } from '@nestjs/common';
import { StartupCheckError } from '../common/startup-check.error';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ANY_SCOPE_KEY, IS_PUBLIC_KEY, ROLES_KEY, SCOPES_KEY } from './auth.decorators';
import { isScope } from './scopes';

/**
 * The metadata keys that mark a method as a route handler, learnt from what Nest's own `@Get()` records on a probe
 * (Nest exports no route list and no name for these keys outside its internal entry point).
 */
const ROUTE_KEYS: unknown[] = (() => {
  const probe = { handler() {} };
  Get()(probe, 'handler', Object.getOwnPropertyDescriptor(probe, 'handler')!);
  return Reflect.getMetadataKeys(probe.handler);
})();

function isRouteHandler(method: object): boolean {
  return ROUTE_KEYS.length > 0 && ROUTE_KEYS.every((key) => Reflect.hasOwnMetadata(key, method));
}

/** A route handler and its controller, as the guard and the start-up check read their metadata (handler first). */
export type RouteTargets = [handler: (...args: never[]) => unknown, controller: Type<unknown>];

/** What is wrong with one handler's access declaration, or `undefined` when it has a valid one. */
export function accessDeclarationProblem(reflector: Reflector, targets: RouteTargets): string | undefined {
  if (reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets)) return undefined;
  const roles = reflector.getAllAndOverride<unknown>(ROLES_KEY, targets);
  if (roles !== undefined && (!Array.isArray(roles) || roles.length === 0 || roles.some((r) => typeof r !== 'string' || !r))) {
    return '@Roles() needs at least one role';
  }
  const scopes = reflector.getAllAndOverride<unknown>(SCOPES_KEY, targets);
  const anyScope = reflector.getAllAndOverride<boolean>(ANY_SCOPE_KEY, targets) === true;
  if (scopes === undefined) return anyScope ? undefined : 'declares neither @Public(), @Scopes(...) nor @AnyScope()';
  if (anyScope) return 'declares both @Scopes(...) and @AnyScope()';
  if (!Array.isArray(scopes) || scopes.length === 0) return '@Scopes() is empty (use @AnyScope() for any valid token)';
  const unknown = scopes.filter((s) => typeof s !== 'string' || !isScope(s));
  if (unknown.length) return `@Scopes() names unknown scopes: ${unknown.join(', ')}`;
  return undefined;
}

/**
 * Refuses to start the application while any route lacks an access declaration, naming each such handler: a
 * forgotten decorator stops the service instead of opening a route to every token.
 */
@Injectable()
export class RouteAccessCheck implements OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onApplicationBootstrap(): void {
    const problems: string[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as Type<unknown> | null;
      if (!controller || !wrapper.instance) continue;
      const prototype = Object.getPrototypeOf(wrapper.instance) as Record<string, (...args: never[]) => unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (!isRouteHandler(handler)) continue;
        const problem = accessDeclarationProblem(this.reflector, [handler, controller]);
        if (problem) problems.push(`${controller.name}.${name}: ${problem}`);
      }
    }
    if (problems.length) {
      throw new StartupCheckError(`routes without a valid access declaration (every route needs one): ${problems.join('; ')}`);
    }
  }
}
