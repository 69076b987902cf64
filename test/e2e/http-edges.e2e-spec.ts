import { connect } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { userBody } from '../support/factories';
import { NO_RATE_LIMITS, expectOAuthError } from '../support/oauth';
import { expectProblem } from '../support/problem';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

describe('HTTP edges: methods, encodings', () => {
  let t: TestApp;
  let admin: UserResponseDto;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    admin = await t.createUser({ role: 'admin' });
    adminToken = await t.token(admin.id);
  });
  afterAll(() => t.close());

  describe('a method the resource does not have', () => {
    it.each([
      ['delete', '/api/resource', 'GET, HEAD'],
      ['patch', '/users', 'GET, HEAD, POST'],
      ['patch', '/users/00000000-0000-4000-8000-000000000000', 'DELETE, GET, HEAD, PUT'],
      ['put', '/token', 'POST'],
      ['get', '/revoke', 'POST'],
      ['delete', '/login', 'GET, HEAD, POST'],
    ] as const)('%s %s: 405 problem+json with Allow: %s', async (method, path, allow) => {
      const res = await t
        .http()
        [method](path)
        .set(...bearer(adminToken));
      expectProblem(res, 405, path);
      expect(res.headers.allow).toBe(allow);
      expect(res.body.detail).toContain(allow);
    });

    it('OPTIONS on an existing path: 204 with Allow', async () => {
      const res = await t.http().options('/users');
      expect(res.status).toBe(204);
      expect(res.headers.allow).toBe('GET, HEAD, POST, OPTIONS');
    });

    it('a path no route has stays 404', async () => {
      const res = await t.http().delete('/no-such-path');
      expectProblem(res, 404, '/no-such-path');
      expect(res.headers.allow).toBeUndefined();
    });
  });

  describe('a body the service cannot decode', () => {
    it('an unsupported Content-Encoding: 415', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'x-unknown')
        .send(JSON.stringify(userBody()));
      expectProblem(res, 415, '/users');
    });

    it.each(['iso-8859-1', 'utf-7', 'utf-16le', 'utf-16', 'utf-32'])('a JSON body in charset %s (JSON is UTF-8): 415', async (charset) => {
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', `application/json; charset=${charset}`)
        .send(JSON.stringify(userBody()));
      expectProblem(res, 415, '/users');
    });

    it('a body nested 5,000 deep: 400 in UTF-8, and 415 in UTF-16LE, whose bytes the depth check cannot read', async () => {
      // `Ģ` (U+0122) is the bytes 0x22 0x01 in UTF-16LE: a byte scanner would take it for a quote and skip the rest.
      const deep = `{"name":"Ģ","x":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
      const utf8 = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', 'application/json')
        .send(deep);
      expectProblem(utf8, 400, '/users');
      expect(utf8.body.detail).toContain('nested deeper than');
      const utf16 = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', 'application/json; charset=utf-16le')
        // The bytes as they are (superagent would turn a Buffer into JSON of its own).
        .serialize(() => Buffer.from(deep, 'utf16le') as unknown as string)
        .send({});
      expectProblem(utf16, 415, '/users');
    });

    it('a body of a media type no route takes: 415, not a 400 about missing fields', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...bearer(adminToken))
        .set('Content-Type', 'text/plain')
        .send(JSON.stringify(userBody()));
      expectProblem(res, 415, '/users');
      const xml = await t
        .http()
        .put(`/users/${admin.id}`)
        .set(...bearer(adminToken))
        .set('Content-Type', 'application/xml')
        .send('<user/>');
      expectProblem(xml, 415, `/users/${admin.id}`);
    });

    it('an unsupported charset or encoding of a /token form: 415 in the OAuth error format', async () => {
      const charset = await t
        .http()
        .post('/token')
        .set('Content-Type', 'application/x-www-form-urlencoded; charset=koi8-r')
        .send('grant_type=authorization_code&code=x');
      expectOAuthError(charset, 415, 'invalid_request');
      const encoding = await t
        .http()
        .post('/token')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .set('Content-Encoding', 'x-unknown')
        .send('grant_type=authorization_code&code=x');
      expectOAuthError(encoding, 415, 'invalid_request');
    });
  });
});

/** Sends raw bytes on a new connection and collects what comes back until the server closes it (or `waitMs`). */
function rawExchange(port: number, send: string, waitMs: number): Promise<{ text: string; closed: boolean; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, ms: Date.now() - started });
    };
    const timer = setTimeout(() => done(false), waitMs);
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('close', () => done(true));
    socket.on('error', () => undefined);
    socket.write(send);
  });
}

describe('slow clients (REQUEST_TIMEOUT=2, HEADERS_TIMEOUT=1)', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp({ REQUEST_TIMEOUT: '2', HEADERS_TIMEOUT: '1' });
    const server = t.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  it('a body that never completes: 408 and the connection closed within the request timeout', async () => {
    const head = 'POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":';
    const res = await rawExchange(port, head, 6000);
    expect(res.closed).toBe(true);
    expect(res.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(res.ms).toBeGreaterThanOrEqual(1900);
    expect(res.ms).toBeLessThan(4000);
  });

  it('headers that never complete: 408 and closed within the headers timeout', async () => {
    const res = await rawExchange(port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ', 6000);
    expect(res.closed).toBe(true);
    expect(res.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(res.ms).toBeGreaterThanOrEqual(900);
    expect(res.ms).toBeLessThan(3000);
  });

  it('a request sent in time is answered', async () => {
    const res = await rawExchange(port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 3000);
    expect(res.text).toMatch(/^HTTP\/1\.1 200 /);
  });
});
