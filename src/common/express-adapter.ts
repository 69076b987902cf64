import http from 'node:http';
import https from 'node:https';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import { indexStaticRoutes } from './static-routes';

/** Node defines these as plain functions; a class could not be called on an existing object. */
const isPlainFunction = (fn: unknown) => typeof fn === 'function' && !/^class\b/.test(Function.prototype.toString.call(fn));

/**
 * Node's `IncomingMessage` and `ServerResponse`, building objects whose prototypes are Express's. They call Node's
 * constructors on the new object (`Reflect.construct` with another prototype measured 5x slower than this).
 */
function expressClasses(app: Express): Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> | undefined {
  if (!isPlainFunction(http.IncomingMessage) || !isPlainFunction(http.ServerResponse)) return undefined;
  function ExpressRequest(this: http.IncomingMessage, socket: Socket): void {
    http.IncomingMessage.call(this, socket);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: http.ServerResponse, req: http.IncomingMessage, options?: object): void {
    (http.ServerResponse as unknown as (this: unknown, ...args: unknown[]) => void).call(this, req, options);
  }
  ExpressResponse.prototype = app.response;
  return {
    IncomingMessage: ExpressRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: ExpressResponse as unknown as typeof http.ServerResponse,
  };
}

/**
 * `@nestjs/platform-express`, with Node's HTTP server creating Express's request and response objects directly.
 *
 * Express gives every request its API by swapping the prototype of Node's `req` and `res` for its own
 * (`Object.setPrototypeOf(req, app.request)` on each request). Changing an object's prototype after it is built
 * gives it a new hidden class and makes V8 keep the objects of every request alive through a young-generation
 * collection or two: measured with a bare Nest hello app on one core, 4 MB of each 11 MB of young objects survived
 * a scavenge, scavenges took 9-12 ms, and the app served 3,200 requests a second. Handing the server constructors
 * whose prototypes already are Express's (Node's `IncomingMessage` and `ServerResponse` options) makes Express's swap
 * a no-op: the same app then kept 10 KB per scavenge, paused under 1 ms and served 8,500-9,200 a second.
 *
 * It also puts the index of literal route paths in front of the routes once they are all registered
 * (`static-routes.ts`, which says where exactly and when requests still walk), so that a request finds its route
 * without Express trying every layer before it.
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    const app = this.getInstance<Express>();
    const classes = expressClasses(app);
    // A Node whose classes cannot be built this way: Nest's own server.
    if (!classes) return super.initHttpServer(options);
    // Nest's own set-up (the shutdown middleware, connection tracking), on a server replaced right below.
    super.initHttpServer({ ...options, forceCloseConnections: false });
    this.httpServer = options.httpsOptions
      ? https.createServer({ ...options.httpsOptions, ...classes }, app)
      : http.createServer(classes, app);
    if (options.forceCloseConnections) (this as unknown as { trackOpenConnections(): void }).trackOpenConnections();
  }

  /** The literal route paths found through the index (see {@link indexStaticRoutes}), once the app is initialised. */
  indexedPaths: readonly string[] = [];

  /** Nest installs its not-found handler once every route is registered: the moment to index the literal ones. */
  override setNotFoundHandler(...args: Parameters<ExpressAdapter['setNotFoundHandler']>): ReturnType<ExpressAdapter['setNotFoundHandler']> {
    this.indexedPaths = indexStaticRoutes(this.getInstance<Express>());
    return super.setNotFoundHandler(...args);
  }
}
