import { Controller, Injectable, type OnApplicationBootstrap, Post, RequestMethod, type Type } from '@nestjs/common';
import { StartupCheckError } from '../common/startup-check.error';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ACCESS_KEY, type AccessRule, IS_PUBLIC_KEY } from './auth.decorators';
import { isScope } from './scopes';

/** The metadata keys Nest's own decorators record: of a route, of its method and path, and of a controller's path. */
export interface RouteProbe {
  routeKeys: unknown[];
  methodKey: unknown;
  pathKey: unknown;
  prefixKey: unknown;
}

const PROBE_PATH = 'probe-path';

/** Decorates a probe with `@Post()` and `@Controller()` (Nest's by default) and reads back the keys they recorded. */
export function probeRouteMetadata(post: typeof Post = Post, controller: typeof Controller = Controller): RouteProbe {
  const probe = { handler() {} };
  post(PROBE_PATH)(probe, 'handler', Object.getOwnPropertyDescriptor(probe, 'handler')!);
  class ProbeController {}
  controller(PROBE_PATH)(ProbeController);
  const keyOf = (target: object, value: unknown) => Reflect.getMetadataKeys(target).find((k) => Reflect.getMetadata(k, target) === value);
  return {
    routeKeys: Reflect.getMetadataKeys(probe.handler),
    methodKey: keyOf(probe.handler, RequestMethod.POST),
    pathKey: keyOf(probe.handler, PROBE_PATH),
    prefixKey: keyOf(ProbeController, PROBE_PATH),
  };
}

const PROBE = probeRouteMetadata();

/**
 * Stops the start when the probe misses a key: without them no method would be taken for a route, and every route
 * would pass the check unread (a Nest that records its routes some other way).
 */
export function assertProbeFound(probe: RouteProbe): void {
  const missing = [
    probe.routeKeys.length === 0 && 'a route',
    probe.methodKey === undefined && "a route's method",
    probe.pathKey === undefined && "a route's path",
    probe.prefixKey === undefined && "a controller's path",
  ].filter(Boolean);
  if (missing.length) {
    throw new StartupCheckError(
      `the route access check cannot tell routes apart: Nest's @Post() and @Controller() recorded no metadata for ${missing.join(', ')}`,
    );
  }
}

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
    assertProbeFound(PROBE);
    const problems: string[] = [];
    let controllers = 0;
    let routes = 0;
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as Type<unknown> | null;
      if (!controller || !wrapper.instance) continue;
      controllers++;
      const prototype = Object.getPrototypeOf(wrapper.instance) as Record<string, (...args: never[]) => unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (!isRouteHandler(handler)) continue;
        routes++;
        const problem = accessDeclarationProblem(this.reflector, [handler, controller]);
        if (problem) problems.push(`${routeName(handler, controller)} (${controller.name}.${name}) ${problem}`);
      }
    }
    // Controllers, yet not one route among their methods: the probe's keys are not those routes carry.
    if (controllers > 0 && routes === 0) {
      throw new StartupCheckError("the route access check found no route among the controllers' methods: it cannot tell routes apart");
    }
    if (problems.length) {
      throw new StartupCheckError(`routes without a valid access declaration (every route needs one): ${problems.join('; ')}`);
    }
  }
}
