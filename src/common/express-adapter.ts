import http from 'node:http';
import https from 'node:https';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';

/**
 * Subclasses of Node's `IncomingMessage` and `ServerResponse` whose prototypes sit in front of Express's: the app's
 * `request` and `response` become these prototypes (which inherit Express's), so the objects the server builds
 * already have the prototypes Express gives them.
 *
 * Subclasses, built the ordinary way: earlier, plain functions calling Node's constructors on the new object (with
 * Express's objects as their prototypes) made V8 size each response for the few properties such a function sets
 * itself; the forty-odd that Node's constructor then added turned every response into a dictionary (slow property
 * lookups and stores through the whole request; see docs/performance.md).
 */
function expressClasses(app: Express): Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  class ExpressRequest extends http.IncomingMessage {}
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  app.request = ExpressRequest.prototype as Express['request'];
  class ExpressResponse extends http.ServerResponse {}
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  app.response = ExpressResponse.prototype as Express['response'];
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof http.ServerResponse };
}

/**
 * `@nestjs/platform-express`, with Node's HTTP server creating Express's request and response objects directly.
 *
 * Express gives every request its API by swapping the prototype of Node's `req` and `res` for its own
 * (`Object.setPrototypeOf(req, app.request)` on each request). Changing an object's prototype after it is built
 * gives it a new hidden class and makes V8 keep the objects of every request alive through a young-generation
 * collection or two. Handing the server classes whose prototypes already are Express's (Node's documented
 * `IncomingMessage` and `ServerResponse` options, {@link expressClasses}) makes Express's swap a no-op.
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  /** Nest's `forceCloseConnections`: {@link close} ends every open connection, through Node's own server API. */
  private forceClose = false;

  override initHttpServer(options: NestApplicationOptions): void {
    const app = this.getInstance<Express>();
    const classes = expressClasses(app);
    // Nest's own set-up (the shutdown middleware), on a server replaced right below.
    super.initHttpServer({ ...options, forceCloseConnections: false });
    this.httpServer = options.httpsOptions
      ? https.createServer({ ...options.httpsOptions, ...classes }, app)
      : http.createServer(classes, app);
    this.forceClose = Boolean(options.forceCloseConnections);
  }

  override close(): ReturnType<ExpressAdapter['close']> {
    if (this.forceClose) (this.httpServer as http.Server | undefined)?.closeAllConnections();
    return super.close();
  }
}
