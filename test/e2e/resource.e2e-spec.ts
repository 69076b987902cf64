import { bearerChallenge } from '../support/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, createTestApp } from '../support/test-app';

describe('GET /api/resource', () => {
  let t: TestApp;
  let userId: string;

  beforeAll(async () => {
    t = await createTestApp();
    userId = (await t.createUser()).id;
  });
  afterAll(() => t.close());

  it('answers any valid access token with the caller in data', async () => {
    const token = await t.token(userId, 'orders:read', 'client-a');
    const res = await t.http().get('/api/resource').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.data).toEqual({
      sub: userId,
      client_id: 'client-a',
      scope: 'orders:read',
      message: expect.any(String),
    });
  });

  it('accepts the scheme name in any case', async () => {
    const token = await t.token(userId);
    const res = await t.http().get('/api/resource').set('Authorization', `bearer ${token}`);
    expect(res.status).toBe(200);
  });

  it('answers 401 with a Bearer realm challenge when no credentials are sent', async () => {
    const res = await t.http().get('/api/resource');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'realm="api"'));
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 401, title: 'Unauthorized', instance: '/api/resource' });
  });
});
