import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES, type TestApp, bearer, createTestApp } from '../support/test-app';
import { expectValidationProblem } from '../support/problem';

const METADATA_PATH = '/.well-known/oauth-protected-resource';

describe('protected-resource metadata (RFC 9728)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ISSUER: 'https://auth.example.com', AUDIENCE: 'https://api.example.com' });
  });
  afterAll(() => t.close());

  it(`GET ${METADATA_PATH} names the resource (the tokens' audience), its authorization server, scopes and bearer methods`, async () => {
    const res = await t.http().get(METADATA_PATH);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(Object.keys(res.body).sort()).toEqual([
      'authorization_servers',
      'bearer_methods_supported',
      'dpop_bound_access_tokens_required',
      'dpop_signing_alg_values_supported',
      'resource',
      'resource_documentation',
      'scopes_supported',
    ]);
    expect(res.body.resource).toBe('https://api.example.com');
    // RFC 9449: DPoP-bound tokens are accepted (with a proof of these algorithms), bearer ones too unless DPOP_REQUIRED.
    expect(res.body.dpop_signing_alg_values_supported).toEqual(['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256']);
    expect(res.body.dpop_bound_access_tokens_required).toBe(false);
    expect(res.body.authorization_servers).toEqual(['https://auth.example.com']);
    expect(res.body.bearer_methods_supported).toEqual(['header']);
    // The resource's scopes: every defined scope but offline_access, an authorization-server scope (a refresh token).
    expect([...res.body.scopes_supported].sort()).toEqual(ALL_SCOPES.filter((s) => s !== 'offline_access').sort());
    expect(res.body.scopes_supported).not.toContain('offline_access');
    expect(res.body.resource_documentation).toBe('https://auth.example.com/docs');
  });

  it('is public and takes no query parameters', async () => {
    expect(
      (
        await t
          .http()
          .get(METADATA_PATH)
          .set(...bearer('not-a-token'))
      ).status,
    ).toBe(200);
    expectValidationProblem(await t.http().get(`${METADATA_PATH}?resource=x`), METADATA_PATH, ['resource']);
  });

  it('every Bearer challenge of the API names it: no token, a bad token, a malformed header, a missing scope', async () => {
    // Derived from the resource identifier (AUDIENCE) as RFC 9728 3.1 has clients derive it; this service serves it.
    const expected = (params: string) => `Bearer ${params}, resource_metadata="https://api.example.com${METADATA_PATH}"`;

    const none = await t.http().get('/api/resource');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe(expected('realm="api"'));

    const bad = await t
      .http()
      .get('/api/resource')
      .set(...bearer('abc.def.ghi'));
    expect(bad.status).toBe(401);
    expect(bad.headers['www-authenticate']).toBe(expected('error="invalid_token"'));

    const malformed = await t.http().get('/api/resource').set('Authorization', 'Bearer a b');
    expect(malformed.status).toBe(400);
    expect(malformed.headers['www-authenticate']).toBe(expected('error="invalid_request"'));

    const user = await t.createUser({ role: 'admin' });
    const narrow = await t
      .http()
      .get('/users')
      .set(...bearer(await t.token(user.id, ['orders:read'])));
    expect(narrow.status).toBe(403);
    expect(narrow.headers['www-authenticate']).toBe(expected('error="insufficient_scope", scope="users:read"'));
  });

  it('the metadata the challenge names leads to the authorization server metadata', async () => {
    const challenge = (await t.http().get('/api/resource')).headers['www-authenticate'] as string;
    const url = new URL(/resource_metadata="([^"]+)"/.exec(challenge)![1]);
    const metadata = await t.http().get(url.pathname);
    const issuer = new URL(metadata.body.authorization_servers[0] as string);
    const as = await t.http().get(`/.well-known/oauth-authorization-server${issuer.pathname === '/' ? '' : issuer.pathname}`);
    expect(as.status).toBe(200);
    expect(as.body.issuer).toBe('https://auth.example.com');
    expect(as.body.token_endpoint).toBe('https://auth.example.com/token');
  });
});

describe('protected-resource metadata for an AUDIENCE with a path (RFC 9728 3.1)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ISSUER: 'https://auth.example.com', AUDIENCE: 'https://auth.example.com/api' });
  });
  afterAll(() => t.close());

  it('is served at the well-known path followed by the resource path, and the challenge names that URL', async () => {
    const res = await t.http().get(`${METADATA_PATH}/api`);
    expect(res.status).toBe(200);
    expect(res.body.resource).toBe('https://auth.example.com/api');
    expect(res.body.authorization_servers).toEqual(['https://auth.example.com']);
    const challenge = (await t.http().get('/api/resource')).headers['www-authenticate'];
    expect(challenge).toBe(`Bearer realm="api", resource_metadata="https://auth.example.com${METADATA_PATH}/api"`);
  });

  it('answers 404 at the bare well-known path and at any other path', async () => {
    expect((await t.http().get(METADATA_PATH)).status).toBe(404);
    expect((await t.http().get(`${METADATA_PATH}/other`)).status).toBe(404);
    expect((await t.http().get(`${METADATA_PATH}/api/more`)).status).toBe(404);
  });
});
