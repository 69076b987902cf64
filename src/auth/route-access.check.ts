import { Controller, Injectable, type OnApplicationBootstrap, Post, RequestMethod, type Type } from '@nestjs/common';
import { StartupCheckError } from '../common/startup-check.error';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ACCESS_KEY, type AccessRule, IS_PUBLIC_KEY } from './auth.decorators';
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

/** A route's access declaration: public, its rule (the handler's, else its controller's), or none. */
export function declaredAccess(reflector: Reflector, targets: RouteTargets): { isPublic: boolean; rule: AccessRule | undefined } {
  return {
    isPublic: reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets) === true,
    rule: reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_KEY, targets),
  };
}

const isNonEmptyList = (value: unknown): value is unknown[] => Array.isArray(value) && value.length > 0;

/** What is wrong with one handler's access declaration, or `undefined` when it has a valid one. */
export function accessDeclarationProblem(reflector: Reflector, targets: RouteTargets): string | undefined {
  const { isPublic, rule } = declaredAccess(reflector, targets);
  if (isPublic) return rule === undefined ? undefined : 'declares both @Public() and @Access()';
  if (rule === undefined) return 'declares neither @Public() nor @Access({ scopes, people })';
  // The types rule most of this out; a rule built at run time (or cast) is checked all the same.
  const { scopes, people, ownRecords, clientTokens } = rule as Partial<Record<keyof AccessRule, unknown>>;
  if (scopes !== 'any' && !isNonEmptyList(scopes)) return "@Access() needs scopes: at least one, or 'any' for any valid token";
  const unknown = scopes === 'any' ? [] : scopes.filter((s) => typeof s !== 'string' || !isScope(s));
  if (unknown.length) return `@Access() names unknown scopes: ${unknown.join(', ')}`;
  if (people !== 'any' && !(isNonEmptyList(people) && people.every((r) => typeof r === 'string' && r))) {
    return "@Access() needs people: the roles that may call it, or 'any' signed-in person";
  }
  if (![undefined, true].includes(ownRecords as never) || ![undefined, true].includes(clientTokens as never)) {
    return '@Access() takes ownRecords and clientTokens as true or not at all';
  }
  const method = methodOf(targets[0]);
  if (method !== undefined && WRITES.has(method) && people === 'any' && !ownRecords) {
    return "lets any person write without acting on their own records only: name the roles (people: ['admin']) or declare ownRecords: true";
  }
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
