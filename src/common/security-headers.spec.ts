import express, { type RequestHandler } from 'express';
import helmet, { type HelmetOptions } from 'helmet';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { securityHeaders } from './security-headers';

function appWith(middleware: RequestHandler) {
  const app = express();
  app.use((_req, res, next) => {
    res.setHeader('X-Powered-By', 'something');
    next();
  });
  app.use(middleware);
  app.get('/', (_req, res) => {
    res.json({ ok: true });
  });
  return app;
}

const withoutDate = (headers: Record<string, unknown>) => {
  const { date: _date, ...rest } = headers;
  return rest;
};

describe('securityHeaders', () => {
  it.each<[string, HelmetOptions]>([
    ['development', { contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } }, strictTransportSecurity: false }],
    ['production', { contentSecurityPolicy: { directives: { upgradeInsecureRequests: [] } }, strictTransportSecurity: true }],
  ])('sends exactly the headers helmet sends (%s settings), and removes X-Powered-By', async (_name, options) => {
    const precomputed = await request(appWith(securityHeaders(options))).get('/');
    const perRequest = await request(appWith(helmet(options))).get('/');
    expect(precomputed.status).toBe(200);
    expect(withoutDate(precomputed.headers)).toEqual(withoutDate(perRequest.headers));
    expect(precomputed.headers['x-powered-by']).toBeUndefined();
    expect(precomputed.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(precomputed.headers['content-security-policy']).toContain("default-src 'self'");
  });

  it('runs helmet per request when a directive is computed per request', async () => {
    let n = 0;
    const app = appWith(securityHeaders({ contentSecurityPolicy: { directives: { scriptSrc: [() => `'nonce-${++n}'`] } } }));
    const first = await request(app).get('/');
    const second = await request(app).get('/');
    expect(first.headers['content-security-policy']).toContain("'nonce-1'");
    expect(second.headers['content-security-policy']).toContain("'nonce-2'");
  });
});
