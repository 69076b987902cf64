import { Controller, Get, Post } from '@nestjs/common';
import { type DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import { StartupCheckError } from '../common/startup-check.error';
import { Public } from './auth.decorators';
import { RouteAccessCheck, assertProbeFound, probeRouteMetadata } from './route-access.check';

/** A decorator factory that records nothing: Nest's own, were they to keep their routes elsewhere. */
const silent = () => () => undefined;

/** The check over these controllers, as the discovery service hands them over. */
function checkOver(...controllers: (new () => object)[]): RouteAccessCheck {
  const discovery = { getControllers: () => controllers.map((type) => ({ metatype: type, instance: new type() })) };
  return new RouteAccessCheck(discovery as unknown as DiscoveryService, new MetadataScanner(), new Reflector());
}

describe('RouteAccessCheck', () => {
  it("finds the keys Nest's @Post() and @Controller() record", () => {
    const probe = probeRouteMetadata();
    expect(probe.routeKeys.length).toBeGreaterThan(0);
    expect(() => assertProbeFound(probe)).not.toThrow();
  });

  it('stops the start when the probe finds no metadata', () => {
    const probe = probeRouteMetadata(silent as unknown as typeof Post, silent as unknown as typeof Controller);
    expect(probe).toEqual({ routeKeys: [], methodKey: undefined, pathKey: undefined, prefixKey: undefined });
    expect(() => assertProbeFound(probe)).toThrow(
      new StartupCheckError(
        "the route access check cannot tell routes apart: Nest's @Post() and @Controller() recorded no metadata for a route, a route's method, a route's path, a controller's path",
      ),
    );
  });

  it('stops the start when controllers have methods but not one is taken for a route', () => {
    class Unrouted {
      list(): string {
        return 'no decorator Nest records';
      }
    }
    expect(() => checkOver(Unrouted).onApplicationBootstrap()).toThrow(
      new StartupCheckError("the route access check found no route among the controllers' methods: it cannot tell routes apart"),
    );
  });

  it('passes routes that declare their access', () => {
    @Public()
    @Controller('open')
    class Open {
      @Get()
      read(): string {
        return 'anyone';
      }
    }
    expect(() => checkOver(Open).onApplicationBootstrap()).not.toThrow();
  });
});
