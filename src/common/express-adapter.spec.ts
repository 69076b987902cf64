import http from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import type { Express, Request, Response } from 'express';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExpressHttpAdapter } from './express-adapter';

describe('ExpressHttpAdapter', () => {
  afterEach(() => vi.restoreAllMocks());

  it('creates one server, with the createServer options it was given', () => {
    const createServer = vi.spyOn(http, 'createServer');
    const options = { requestTimeout: 2_000, headersTimeout: 1_000, connectionsCheckingInterval: 250 };
    const adapter = new ExpressHttpAdapter(options);
    adapter.initHttpServer({});
    expect(createServer).toHaveBeenCalledTimes(1);
    expect(createServer.mock.calls[0]![0]).toMatchObject(options);
    const server = adapter.getHttpServer() as http.Server;
    expect(server).toBe(createServer.mock.results[0]!.value);
    expect([server.requestTimeout, server.headersTimeout]).toEqual([2_000, 1_000]);
  });

  it("creates each request and response with Express's prototypes, before Express sees them", async () => {
    const adapter = new ExpressHttpAdapter();
    adapter.initHttpServer({});
    const app = adapter.getInstance<Express>();
    const server = adapter.getHttpServer() as http.Server;
    const arrived: { req?: object | null; res?: object | null } = {};
    // Runs before Express's own listener, so it sees the objects as Node built them.
    server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      arrived.req = Object.getPrototypeOf(req) as object | null;
      arrived.res = Object.getPrototypeOf(res) as object | null;
    });
    app.get('/probe', (req: Request, res: Response) => {
      res.status(201).json({ path: req.path, ip: typeof req.ip, header: req.get('x-probe') });
    });

    const response = await request(server).get('/probe?x=1').set('X-Probe', 'yes');

    expect(arrived.req).toBe(app.request);
    expect(arrived.res).toBe(app.response);
    // Node's and Express's APIs both work on them.
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({ path: '/probe', ip: 'string', header: 'yes' });
  });

  it('honours the options Nest gives it (the 503 once the application closes)', async () => {
    const adapter = new ExpressHttpAdapter();
    adapter.initHttpServer({ return503OnClosing: true });
    const app = adapter.getInstance<Express>();
    app.get('/probe', (_req: Request, res: Response) => {
      res.json({ ok: true });
    });
    const server = adapter.getHttpServer() as http.Server;
    expect((await request(server).get('/probe')).status).toBe(200);
    adapter.beforeClose();
    const closing = await request(server).get('/probe');
    expect(closing.status).toBe(503);
    expect(closing.headers.connection).toBe('close');
  });

  it.each([
    [true, 'connection ended'],
    [false, 'answered'],
  ])('with forceCloseConnections %s, close() during a request: %s', async (force, outcome) => {
    const adapter = new ExpressHttpAdapter();
    adapter.initHttpServer({ forceCloseConnections: force });
    adapter.getInstance<Express>().get('/slow', (_req: Request, res: Response) => {
      setTimeout(() => res.json({ ok: true }), 300);
    });
    const server = adapter.getHttpServer() as http.Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    const seen = new Promise<string>((resolve) => {
      socket.once('data', () => resolve('answered'));
      socket.once('close', () => resolve('connection ended'));
    });
    socket.write('GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n');
    // The request has arrived and waits for its handler.
    await new Promise((r) => setTimeout(r, 50));
    const closed = adapter.close() as Promise<unknown>;
    expect(await seen).toBe(outcome);
    socket.destroy();
    await closed;
  });

  describe('reply (the answer of a Nest handler)', () => {
    const body = { data: { name: 'Zoë', tags: ['a', 'b'] } };
    const json = JSON.stringify(body);
    function replying(answer: unknown, status?: number, before?: (res: Response) => void) {
      const adapter = new ExpressHttpAdapter();
      adapter.initHttpServer({});
      adapter.getInstance<Express>().all('/answer', (_req: Request, res: Response) => {
        before?.(res);
        adapter.reply(res, answer, status);
      });
      return adapter.getHttpServer() as http.Server;
    }

    it('writes an object as JSON with its type, its byte length and the status', async () => {
      const response = await request(replying(body, 201)).get('/answer');
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.headers['content-length']).toBe(String(Buffer.byteLength(json)));
      expect(response.text).toBe(json);
    });

    it("answers HEAD with the GET's headers and no body", async () => {
      const response = await request(replying(body)).head('/answer');
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.headers['content-length']).toBe(String(Buffer.byteLength(json)));
      expect(response.text).toBeUndefined();
    });

    it("leaves a conditional request to Express's freshness check (If-None-Match: * is answered 304)", async () => {
      const response = await request(replying(body)).get('/answer').set('If-None-Match', '*');
      expect(response.status).toBe(304);
      expect(response.text).toBe('');
    });

    it('keeps a type the handler set', async () => {
      const response = await request(replying(body, 200, (res) => res.type('application/problem+json'))).get('/answer');
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(JSON.parse(response.text)).toEqual(body);
    });

    it('sends a string and a bodiless status as Nest does', async () => {
      const text = await request(replying('plain')).get('/answer');
      expect(text.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(text.text).toBe('plain');
      const empty = await request(replying({ ignored: true }, 204)).get('/answer');
      expect(empty.status).toBe(204);
      expect(empty.text).toBe('');
    });
  });
});
