import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { namedClient } from './named-client';

const req = (authorization: string | undefined, body: Record<string, unknown> = {}) => ({ headers: { authorization }, body }) as Request;
const assertionFor = (sub: string) => `e30.${Buffer.from(JSON.stringify({ sub })).toString('base64url')}.sig`;

describe('namedClient', () => {
  it('reads the HTTP Basic user first, then client_id, then the assertion subject', () => {
    const basic = `Basic ${Buffer.from('basic-client:secret').toString('base64')}`;
    expect(namedClient(req(basic, { client_id: 'body-client' }))).toBe('basic-client');
    expect(namedClient(req(undefined, { client_id: 'body-client', client_assertion: assertionFor('jwt-client') }))).toBe('body-client');
    expect(namedClient(req(undefined, { client_assertion: assertionFor('jwt-client') }))).toBe('jwt-client');
  });

  it('is undefined when the request names no client', () => {
    expect(namedClient(req(undefined))).toBeUndefined();
    expect(namedClient(req('Bearer abc', { client_assertion: 'not-a-jwt' }))).toBeUndefined();
  });
});
