import { Controller, Post, Query, RequestMethod, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ACCESS_KEY, type AccessRule, IS_PUBLIC_KEY } from '../../src/auth/auth.decorators';
import { NoQueryParamsPipe } from '../../src/common/validation';
import type { TestApp } from './test-app';

// The route inventory's view of the app: every route its controllers register, read from their decorators'
// metadata (test/e2e/route-inventory.e2e-spec.ts checks it against the contract).

/**
 * The metadata keys Nest's public decorators write, learnt from a probe decorated with them (Nest names these keys
 * only in its internal modules): a handler's path and method, a controller's path, and a handler's parameters
 * (keyed `<type>:<index>`, the type of `@Query()` read off the probe's one parameter).
 */
const NEST = (() => {
  class Probe {
    handler(_query: unknown): void {}
  }
  Post('probe-path')(Probe.prototype, 'handler', Object.getOwnPropertyDescriptor(Probe.prototype, 'handler')!);
  Query()(Probe.prototype, 'handler', 0);
  Controller('probe-prefix')(Probe);
  const keyOf = (target: object, value: unknown) => Reflect.getMetadataKeys(target).find((k) => Reflect.getMetadata(k, target) === value);
  const [args] = Reflect.getMetadataKeys(Probe, 'handler') as unknown[];
  const [querySlot] = Object.keys((Reflect.getMetadata(args, Probe, 'handler') ?? {}) as object);
  const keys = {
    path: keyOf(Probe.prototype.handler, 'probe-path'),
    method: keyOf(Probe.prototype.handler, RequestMethod.POST),
    prefix: keyOf(Probe, 'probe-prefix'),
    args,
    queryType: querySlot?.split(':')[0],
  };
  for (const [name, key] of Object.entries(keys)) if (key === undefined) throw new Error(`the probe found no key for ${name}`);
  return keys as Record<keyof typeof keys, string>;
})();

export interface Route {
  method: string;
  path: string;
  controller: string;
  handler: string;
  isPublic: boolean;
  scopes: unknown;
  /** How the route declares its query string: a DTO class, `@NoQueryParams()`, or not at all. */
  query: 'dto' | 'none' | undefined;
  anyScope: boolean;
  roles: readonly string[] | undefined;
  clientTokens: boolean;
  ownRecords: boolean;
}

/** Reads a handler's `@Query()` parameter: a DTO class, or the pipe of `@NoQueryParams()`. */
function queryDeclaration(controller: Type<unknown>, name: string): Route['query'] {
  const args = (Reflect.getMetadata(NEST.args, controller, name) ?? {}) as Record<string, { index: number; pipes?: unknown[] }>;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, name) ?? []) as unknown[];
  for (const [slot, arg] of Object.entries(args)) {
    if (slot.split(':')[0] !== NEST.queryType) continue;
    if (arg.pipes?.some((pipe) => pipe instanceof NoQueryParamsPipe)) return 'none';
    const type = types[arg.index];
    if (typeof type === 'function' && type !== Object) return 'dto';
  }
  return undefined;
}

function joinPath(...parts: string[]): string {
  const joined = parts
    .flatMap((p) => p.split('/'))
    .filter(Boolean)
    .join('/');
  return `/${joined}`;
}

function asList(value: unknown): string[] {
  if (value === undefined) return [''];
  return Array.isArray(value) ? value : [value as string];
}

/** Every route Nest registered for a controller, read from the metadata its decorators left (no hand-kept list). */
export function discoverRoutes(t: TestApp): Route[] {
  const discovery = t.app.get(DiscoveryService);
  const scanner = t.app.get(MetadataScanner);
  const reflector = t.app.get(Reflector);
  const routes: Route[] = [];
  for (const wrapper of discovery.getControllers()) {
    const { instance } = wrapper;
    const controller = wrapper.metatype as Type<unknown> | null;
    if (!instance || !controller) continue;
    const prefixes = asList(reflector.get(NEST.prefix, controller));
    for (const name of scanner.getAllMethodNames(Object.getPrototypeOf(instance))) {
      const handler = (instance as Record<string, unknown>)[name] as (...args: unknown[]) => unknown;
      const paths = reflector.get<string | string[] | undefined>(NEST.path, handler);
      if (paths === undefined) continue;
      const method = RequestMethod[reflector.get<RequestMethod>(NEST.method, handler)];
      const targets = [handler, controller];
      const rule = reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_KEY, targets);
      for (const prefix of prefixes) {
        for (const path of asList(paths)) {
          routes.push({
            method,
            path: joinPath(prefix, path),
            controller: controller.name,
            handler: name,
            // Read as the global guard reads it: the handler first, then the class.
            isPublic: reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets) === true,
            scopes: rule?.scopes === 'any' ? undefined : rule?.scopes,
            query: queryDeclaration(controller, name),
            anyScope: rule?.scopes === 'any',
            roles: rule === undefined || rule.people === 'any' ? undefined : rule.people,
            clientTokens: rule?.clientTokens === true,
            ownRecords: rule?.ownRecords === true,
          });
        }
      }
    }
  }
  return routes;
}

export const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
