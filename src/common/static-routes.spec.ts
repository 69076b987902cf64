import { tracingChannel } from 'node:diagnostics_channel';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { indexStaticRoutes } from './static-routes';

interface Layer {
  name: string;
  route?: { path: string };
  match(path: string): unknown;
}

const stackOf = (app: Express) => (app as unknown as { router: { stack: Layer[] } }).router.stack;

/** The app's layers whose `match` the router called for one request, by name or route path. */
function recordMatches(app: Express): string[] {
  const seen: string[] = [];
  for (const layer of stackOf(app)) {
    const match = layer.match.bind(layer);
    layer.match = (path: string) => {
      seen.push(layer.route?.path ?? layer.name);
      return match(path);
    };
  }
  return seen;
}

function app(build: (app: Express) => void): Express {
  const app = express();
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader('x-global', 'ran');
    next();
  });
  build(app);
  indexStaticRoutes(app);
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).json({ error: error.message });
  });
  return app;
}

describe('indexStaticRoutes', () => {
  it('serves a literal path through the index, after the global middleware, without trying the routes before it', async () => {
    const target = app((a) => {
      for (let i = 0; i < 20; i++) a.get(`/other/${i}/:id`, (_req, res) => res.send('other'));
      a.get('/hot', (req, res) =>
        res.json({
          route: (req.route as { path: string }).path,
          params: req.params,
          nullPrototype: Object.getPrototypeOf(req.params) === null,
        }),
      );
    });
    const seen = recordMatches(target);
    const res = await request(target).get('/hot?x=1');
    expect(res.status).toBe(200);
    expect(res.headers['x-global']).toBe('ran');
    expect(res.body).toEqual({ route: '/hot', params: {}, nullPrototype: true });
    // The global middleware and the index layer; none of the twenty routes before /hot, nor /hot's own layer.
    expect(seen).toEqual(['<anonymous>', 'staticRoute']);
  });

  it('leaves a path to the walk where an earlier route or mount takes it, so the earlier one still wins', async () => {
    const target = app((a) => {
      a.get('/items/:id', (req, res) => res.send(`param ${req.params.id}`));
      a.get('/items/new', (_req, res) => res.send('literal'));
      a.use('/docs', (_req, res) => res.send('mount'));
      a.get('/docs', (_req, res) => res.send('route'));
    });
    expect((await request(target).get('/items/new')).text).toBe('param new');
    expect((await request(target).get('/docs')).text).toBe('mount');
  });

  it('puts the index after a middleware for every path registered among the routes, which still runs first', async () => {
    const target = app((a) => {
      a.get('/docs', (_req, res) => res.send('docs'));
      a.use((_req: Request, res: Response, next: NextFunction) => {
        res.setHeader('x-late', 'ran');
        next();
      });
      a.get('/hot', (_req, res) => res.send('hot'));
    });
    const seen = recordMatches(target);
    const res = await request(target).get('/hot');
    expect(res.text).toBe('hot');
    expect(res.headers['x-late']).toBe('ran');
    expect(seen).toEqual(['<anonymous>', '/docs', '<anonymous>', 'staticRoute']);
  });

  it('answers what the walk answers for other spellings, other methods, HEAD and OPTIONS', async () => {
    const target = app((a) => {
      a.get('/hot', (_req, res) => res.send('get'));
      a.post('/hot', (_req, res) => res.send('post'));
    });
    expect((await request(target).get('/HOT')).text).toBe('get');
    expect((await request(target).get('/hot/')).text).toBe('get');
    expect((await request(target).post('/hot')).text).toBe('post');
    const head = await request(target).head('/hot');
    expect(head.status).toBe(200);
    const options = await request(target).options('/hot');
    expect(options.status).toBe(200);
    expect(options.headers.allow).toBe('GET, HEAD, POST');
    expect((await request(target).delete('/hot')).status).toBe(404);
  });

  it('goes on after a route that passes the request on, without running that route twice', async () => {
    let first = 0;
    const target = app((a) => {
      a.get('/hot', (_req, _res, next) => {
        first++;
        next();
      });
      a.get('/hot', (_req, res) => res.send('second'));
    });
    const res = await request(target).get('/hot');
    expect(res.text).toBe('second');
    expect(first).toBe(1);
  });

  it("leaves every request to the walk while the router's tracing has a listener, so its spans name the route", async () => {
    const target = app((a) => {
      a.get('/other/:id', (_req, res) => res.send('other'));
      a.get('/hot', (_req, res) => res.send('hot'));
    });
    const seen = recordMatches(target);
    const traced: unknown[] = [];
    const channel = tracingChannel('express.router.request');
    const onStart = (context: unknown) => {
      traced.push((context as { route?: unknown }).route);
    };
    channel.start.subscribe(onStart);
    try {
      expect((await request(target).get('/hot')).text).toBe('hot');
    } finally {
      channel.start.unsubscribe(onStart);
    }
    expect(traced).toContain('/hot');
    expect(seen).toContain('/hot');
  });

  it('indexes nothing in an app without routes', () => {
    expect(indexStaticRoutes(express())).toEqual([]);
  });

  it('leaves a path with a percent sign to the walk, which an earlier parameter route fails to decode', async () => {
    // Before the index skipped such paths, checking "/a%E0" against "/:name" threw while the app started.
    const target = app((a) => {
      a.get('/:name', (req, res) => res.send(`param ${req.params.name}`));
      a.get('/a%E0', (_req, res) => res.send('literal'));
    });
    const res = await request(target).get('/a%E0');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "Failed to decode param 'a%E0'" });
  });

  it("hands a route's error to the error handlers", async () => {
    const target = app((a) => {
      a.get('/hot', () => {
        throw new Error('boom');
      });
      a.get('/hot', (_req, res) => res.send('not reached'));
    });
    const res = await request(target).get('/hot');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'boom' });
  });
});
