import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppConfig } from '../../src/config/app-config';
import type { DemoData } from '../../src/demo/demo-commands';
import { DemoDataService } from '../../src/demo/demo-data.service';
import { UsersService } from '../../src/users/users.service';
import { ALL_SCOPES, type TestApp, bearer, createTestApp } from '../support/test-app';

describe('demo data on an empty database (outside production)', () => {
  let t: TestApp;
  let adminToken: string;
  let demo: DemoData;
  let issuer: string;

  beforeAll(async () => {
    t = await createTestApp();
    demo = (await t.app.get(DemoDataService).seedIfEmpty())!;
    expect(demo?.adminEmail).toBe('admin@example.com');
    issuer = t.app.get(AppConfig).issuer;
    const row = await t.app.get(UsersService).credentials('admin@example.com');
    expect(row).toBeDefined();
    adminToken = await t.token(row!.id, ['users:read', 'orders:read']);
  });
  afterAll(() => t.close());

  it('shows a dozen people of each gender, sorted by age in the database', async () => {
    for (const gender of ['female', 'male', 'other']) {
      const res = await t
        .http()
        .get(`/users?gender=${gender}&sort=age&order=desc&limit=100`)
        .set(...bearer(adminToken));
      expect(res.status).toBe(200);
      const people = res.body.data.filter((u: { role: string }) => u.role === 'user');
      expect(people).toHaveLength(12);
      const ages = people.map((u: { age: number }) => u.age);
      expect(ages).toEqual([...ages].sort((a, b) => b - a));
      expect(new Set(ages).size).toBeGreaterThan(6);
    }
  });

  it('gives each of them one to three orders', async () => {
    const users = (
      await t
        .http()
        .get('/users?gender=male&limit=100')
        .set(...bearer(adminToken))
    ).body.data as { id: string }[];
    for (const user of users) {
      const orders = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...bearer(adminToken));
      expect(orders.status).toBe(200);
      expect(orders.body.data.length).toBeGreaterThanOrEqual(1);
      expect(orders.body.data.length).toBeLessThanOrEqual(3);
    }
  });

  it('asks for a code with PKCE (S256) and an unguessable state, and hands out the verifier beside the URL', () => {
    expect(demo.codeVerifier).toMatch(/^[\w-]{43}$/);
    const url = new URL(demo.authorizationUrl);
    expect(`${url.origin}${url.pathname}`).toBe(`${issuer}/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: demo.clientId,
      redirect_uri: `${issuer}/demo/callback`,
      scope: ALL_SCOPES.join(' '),
      state: expect.stringMatching(/^[\w-]{16}$/),
      code_challenge: createHash('sha256').update(demo.codeVerifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    expect(demo.codeTtlSeconds).toBe(60);
  });

  it('shows on the callback page the curl line for its code, the client secret and the verifier left to the shell', async () => {
    const res = await t.http().get('/demo/callback').query({ code: 'Abc_123-xyz', state: 'st', iss: issuer });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toContain('<code id="code">Abc_123-xyz</code>');
    expect(res.text).toContain('within 60 seconds');
    expect(res.text).toContain(
      `<code id="token-command">TOKENS=$(curl -s -u &quot;$CLIENT_ID:$CLIENT_SECRET&quot; -d grant_type=authorization_code -d code=Abc_123-xyz -d code_verifier=&quot;$CODE_VERIFIER&quot; -d redirect_uri=${issuer}/demo/callback ${issuer}/token); echo &quot;$TOKENS&quot;; ACCESS_TOKEN=$(echo &quot;$TOKENS&quot; | jq -r .access_token)</code>`,
    );
  });

  it('puts no shell line on the callback page for a value no code of this server has, and escapes what it shows', async () => {
    const res = await t.http().get('/demo/callback').query({ code: '$(touch x)<b>', state: '"><i>' });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('token-command');
    expect(res.text).not.toContain('curl');
    expect(res.text).toContain('<code id="code">$(touch x)&lt;b&gt;</code>');
    expect(res.text).toContain('state: <code>&quot;&gt;&lt;i&gt;</code>');
    expect(res.text).toContain('No code of this server in this request');
  });

  it('seeds only once', async () => {
    expect(await t.app.get(DemoDataService).seedIfEmpty()).toBeUndefined();
  });
});
