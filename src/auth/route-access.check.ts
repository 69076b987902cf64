import { Controller, Injectable, type OnApplicationBootstrap, Post, RequestMethod, type Type } from '@nestjs/common';
import { StartupCheckError } from '../common/startup-check.error';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ANY_PERSON_KEY, ANY_SCOPE_KEY, IS_PUBLIC_KEY, ROLES_KEY, SCOPES_KEY } from './auth.decorators';
import { isScope } from './scopes';

/** What Nest's own decorators record on a probe: the metadata keys of a route, and of its method and path. */
const PROBE_PATH = 'probe-path';
const PROBE = (() => {
  const probe = { handler() {} };
  Post(PROBE_PATH)(probe, 'handler', Object.getOwnPropertyDescriptor(probe, 'handler')!);
  @Controller(PROBE_PATH)
  class ProbeController {}
  const keys = Reflect.getMetadataKeys(probe.handler);
  const keyOf = (target: object, value: unknown) => Reflect.getMetadataKeys(target).find((k) => Reflect.getMetadata(k, target) === value);
  return {
    routeKeys: keys,
    methodKey: keyOf(probe.handler, RequestMethod.POST),
    pathKey: keyOf(probe.handler, PROBE_PATH),
    prefixKey: keyOf(ProbeController, PROBE_PATH),
  };
})();

/**
 * Whether a method is a route handler: it carries every key Nest's own `@Post()` records (Nest exports no route
 * list and no name for these keys outside its internal entry point).
 */
function isRouteHandler(method: object): boolean {
  return PROBE.routeKeys.length > 0 && PROBE.routeKeys.every((key) => Reflect.hasOwnMetadata(key, method));
}

const WRITES = new Set([RequestMethod.POST, RequestMethod.PUT, RequestMethod.PATCH, RequestMethod.DELETE]);

/** A handler's HTTP method, as Nest's decorator recorded it. */
function methodOf(handler: object): RequestMethod | undefined {
  return PROBE.methodKey === undefined ? undefined : (Reflect.getMetadata(PROBE.methodKey, handler) as RequestMethod | undefined);
}

/** `POST /users/:userId/orders`: a route's method and path, for messages. */
export function routeName(handler: object, controller: object): string {
  const part = (target: object, key: unknown) => {
    const value: unknown = key === undefined ? undefined : Reflect.getMetadata(key, target);
    return (Array.isArray(value) ? value[0] : value) as string | undefined;
  };
  const path = [part(controller, PROBE.prefixKey), part(handler, PROBE.pathKey)]
    .flatMap((p) => (p ?? '').split('/'))
    .filter(Boolean)
    .join('/');
  const method = methodOf(handler);
  return `${method === undefined ? '?' : RequestMethod[method]} /${path}`;
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
  const anyPerson = reflector.getAllAndOverride<boolean>(ANY_PERSON_KEY, targets) === true;
  if (roles !== undefined && anyPerson) return 'declares both @Roles(...) and @AnyPerson()';
  const method = methodOf(targets[0]);
  if (method !== undefined && WRITES.has(method) && roles === undefined && !anyPerson) {
    return 'writes, and declares neither @Roles(...) nor @AnyPerson()';
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
        if (problem) problems.push(`${routeName(handler, controller)} (${controller.name}.${name}) ${problem}`);
      }
    }
    if (problems.length) {
      throw new StartupCheckError(`routes without a valid access declaration (every route needs one): ${problems.join('; ')}`);
    }
  }
}
