import http from 'node:http';
import https from 'node:https';
import { type NestApplicationOptions, StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, NextFunction, Request, Response } from 'express';

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
 *
 * It creates the one server itself, with the `http.createServer` options it is given (timeouts and how often Node
 * checks them), and honours Nest's `httpsOptions`, `forceCloseConnections` and `return503OnClosing`.
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  /** Nest's `forceCloseConnections`: {@link close} ends every open connection, through Node's own server API. */
  private forceClose = false;
  /** Set once the application starts closing (Nest's `return503OnClosing` answers 503 from then on). */
  private closing = false;

  constructor(private readonly serverOptions: http.ServerOptions = {}) {
    super();
  }

  override initHttpServer(options: NestApplicationOptions): void {
    const app = this.getInstance<Express>();
    const serverOptions = { ...this.serverOptions, ...expressClasses(app) };
    this.setHttpServer(
      options.httpsOptions ? https.createServer({ ...options.httpsOptions, ...serverOptions }, app) : http.createServer(serverOptions, app),
    );
    if (options.return503OnClosing) {
      app.use((_req: Request, res: Response, next: NextFunction) => {
        if (!this.closing) return next();
        res.set('Connection', 'close');
        res.status(503).send('Service Unavailable');
      });
    }
    this.forceClose = Boolean(options.forceCloseConnections);
  }

  /**
   * A handler's object answer, written through Node's response API: serialised once, its type and length set, one
   * `end`. Express's `res.json` does the same by way of `res.send`, which parses and formats again the type it has
   * just set and checks the request's freshness, which matters only to a conditional request (those, bodiless
   * statuses, a type the handler chose, errors, streams and bytes keep Nest's own reply).
   */
  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    if (!isPlainJsonAnswer(response, body, statusCode)) return super.reply(response, body, statusCode);
    if (statusCode !== undefined) response.statusCode = statusCode;
    const json = JSON.stringify(body);
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', Buffer.byteLength(json));
    // Node drops the body of a HEAD response itself and keeps the length of the GET's.
    return response.end(json);
  }

  override beforeClose(): void {
    this.closing = true;
    super.beforeClose();
  }

  override close(): ReturnType<ExpressAdapter['close']> {
    this.closing = true;
    if (this.forceClose) (this.getHttpServer() as http.Server | undefined)?.closeAllConnections();
    return super.close();
  }
}

/** Whether {@link ExpressHttpAdapter.reply} writes this answer itself: an object body of a plain, unconditional request. */
function isPlainJsonAnswer(response: Response, body: unknown, statusCode: number | undefined): boolean {
  if (typeof body !== 'object' || body === null) return false;
  if (body instanceof StreamableFile || body instanceof Error || ArrayBuffer.isView(body)) return false;
  if (statusCode === 204 || statusCode === 304 || response.hasHeader('Content-Type')) return false;
  const headers = response.req.headers;
  return headers['if-none-match'] === undefined && headers['if-modified-since'] === undefined;
}
