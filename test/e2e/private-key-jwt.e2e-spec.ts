import { createHmac, createPublicKey, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';
import * as oauth from 'oauth4webapi';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AuditEventView } from '../../src/audit/audit.service';
import { ClientAssertionVerifier, JWT_BEARER_ASSERTION_TYPE } from '../../src/oauth/client-auth/client-assertion';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView, type CreateClientInput } from '../../src/oauth/clients/client-metadata';
import { ClientCreateCommand } from '../../src/oauth/clients/commands/client-create.command';
import { ClientUpdateCommand } from '../../src/oauth/clients/commands/client-update.command';
import { startDocumentServer } from '../support/document-server';
import { rsaJwk } from '../support/hostile-keys';
import {
  NO_RATE_LIMITS,
  authorizeCode,
  b64url,
  basicAuth,
  decodeJwt,
  expectOAuthError,
  pkcePair,
  registerClient,
  signedIn,
} from '../support/oauth';
import { type TestApp, bearer, createListeningTestApp, createTestApp, createTwoInstances } from '../support/test-app';

type Alg = 'RS256' | 'ES256' | 'EdDSA' | 'Ed25519';

interface Signer {
  alg: Alg;
  kid: string;
  privateKey: CryptoKey;
  /** The public key as the client registers it. */
  jwk: JWK;
}

async function signer(alg: Alg, kid = `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid } };
}

const jwksOf = (...signers: Signer[]) => ({ keys: signers.map((s) => s.jwk) });

/** Claims of a client assertion as a well-behaved client writes them; `undefined` in `overrides` drops a claim. */
function claimsFor(t: TestApp, clientId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: clientId,
    sub: clientId,
    aud: t.config.issuer,
    iat: now,
    exp: now + 60,
    jti: randomUUID(),
    ...overrides,
  };
  for (const name of Object.keys(claims)) if (claims[name] === undefined) delete claims[name];
  return claims;
}

async function assertion(
  t: TestApp,
  clientId: string,
  key: Signer,
  overrides: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT(claimsFor(t, clientId, overrides))
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header } as { alg: string })
    .sign(key.privateKey);
}

/** POSTs a form to `path` authenticated by `clientAssertion` (with `client_id` only when `extra` names it). */
function withAssertion(
  t: TestApp,
  path: '/token' | '/revoke' | '/introspect',
  clientAssertion: string,
  form: Record<string, string>,
  extra: Record<string, string> = {},
): Promise<Response> {
  const body = new URLSearchParams({
    ...form,
    client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
    client_assertion: clientAssertion,
    ...extra,
  });
  return t.http().post(path).type('form').send(body.toString()) as unknown as Promise<Response>;
}

/** A confidential private_key_jwt client made through the service (as client:create and the admin API do). */
function keyClient(t: TestApp, keys: Signer[], input: Partial<CreateClientInput> = {}): Promise<ClientView> {
  return registerClient(t, {
    name: 'Key client',
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwks: jwksOf(...keys),
    grantTypes: ['client_credentials'],
    redirectUris: [],
    scope: 'users:read',
    ...input,
  });
}

const clientCredentials = { grant_type: 'client_credentials', scope: 'users:read' };

function expectTokens(res: Response, clientId: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.pragma).toBe('no-cache');
  expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 900, scope: 'users:read' });
  expect(decodeJwt(res.body.access_token).payload).toMatchObject({ sub: clientId, client_id: clientId, scope: 'users:read' });
}

describe('private_key_jwt client authentication (RFC 7523 2.2, OpenID Connect Core 9)', () => {
  let t: TestApp;
  let auditToken: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    const admin = await t.createUser({ role: 'admin' });
    auditToken = await t.token(admin.id, ['audit:read', 'clients:admin']);
  });
  afterAll(() => t.close());

  async function failures(clientId: string): Promise<AuditEventView[]> {
    const res = await t
      .http()
      .get('/admin/audit-events')
      .query({ limit: '100', order: 'asc', client_id: clientId, type: 'client.authentication_failed' })
      .set(...bearer(auditToken));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as AuditEventView[];
  }

  /** 401 invalid_client without a Basic challenge, and one audit event naming the client with `reason` (never the assertion). */
  async function expectRefused(res: Response, clientId: string, reason: string, sent?: string): Promise<void> {
    expectOAuthError(res, 401, 'invalid_client');
    expect(res.body.error_description).toBe(reason);
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(res.headers['cache-control']).toBe('no-store');
    const events = await failures(clientId);
    expect(events.at(-1)).toMatchObject({
      type: 'client.authentication_failed',
      actor: 'anonymous',
      client_id: clientId,
      request_id: res.headers['x-request-id'],
      details: { reason },
    });
    if (sent) expect(JSON.stringify(events)).not.toContain(sent.split('.')[2]);
  }

  describe('metadata', () => {
    it('lists private_key_jwt and its signing algorithms for the token, revocation and introspection endpoints', async () => {
      const res = await t.http().get('/.well-known/oauth-authorization-server');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
        token_endpoint_auth_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA', 'Ed25519'],
        revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
        revocation_endpoint_auth_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA', 'Ed25519'],
        introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
        introspection_endpoint_auth_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA', 'Ed25519'],
      });
      const openapi = await t.http().get('/docs/openapi.json');
      const form = openapi.body.paths['/token'].post.requestBody.content['application/x-www-form-urlencoded'].schema.properties;
      expect(form.client_assertion_type).toMatchObject({ type: 'string', enum: [JWT_BEARER_ASSERTION_TYPE] });
      expect(form.client_assertion).toMatchObject({ type: 'string' });
    });
  });

  describe('authenticates', () => {
    it.each(['RS256', 'ES256', 'EdDSA', 'Ed25519'] as const)('a client_credentials request signed with %s', async (alg) => {
      const key = await signer(alg);
      const client = await keyClient(t, [key]);
      expect(client).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key), public: false });
      expect(client).not.toHaveProperty('client_secret');
      expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, key), clientCredentials), client.client_id);
    });

    it('takes Ed25519 for a key or a client pinned to EdDSA, and EdDSA for Ed25519 (two names of one algorithm)', async () => {
      for (const [marked, signedAs] of [
        ['EdDSA', 'Ed25519'],
        ['Ed25519', 'EdDSA'],
      ] as const) {
        const key = await signer(signedAs);
        const client = await keyClient(t, [{ ...key, jwk: { ...key.jwk, alg: marked } }]);
        expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, key), clientCredentials), client.client_id);
        const pinned = await keyClient(t, [key], { tokenEndpointAuthSigningAlg: marked });
        expectTokens(await withAssertion(t, '/token', await assertion(t, pinned.client_id, key), clientCredentials), pinned.client_id);
      }
    });

    it('changes only the pinned algorithm when no new keys are given (client:update --signing-alg alone), to one a key fits', async () => {
      const key = await signer('ES256');
      const rsa = await signer('RS256');
      const client = await keyClient(t, [key, rsa], { tokenEndpointAuthSigningAlg: 'RS256' });
      expectOAuthError(
        await withAssertion(t, '/token', await assertion(t, client.client_id, key), clientCredentials),
        401,
        'invalid_client',
      );
      const clients = t.app.get(ClientsService);
      const updated = await clients.update(client.client_id, { tokenEndpointAuthSigningAlg: 'ES256' });
      expect(updated).toMatchObject({ jwks: jwksOf(key, rsa), token_endpoint_auth_signing_alg: 'ES256' });
      expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, key), clientCredentials), client.client_id);
      // An algorithm none of the keys can verify would lock the client out: refused.
      await expect(clients.update(client.client_id, { tokenEndpointAuthSigningAlg: 'EdDSA' })).rejects.toThrow(
        'token_endpoint_auth_signing_alg EdDSA fits none of the keys',
      );
    });

    it('without a kid, by trying the keys that fit the algorithm; with client_id equal to sub; with aud a list holding the token endpoint', async () => {
      const ec = await signer('ES256');
      const rsa = await signer('RS256');
      const other = await signer('RS256');
      const client = await keyClient(t, [ec, other, rsa]);
      const noKid = await assertion(t, client.client_id, rsa, {}, { kid: undefined });
      expectTokens(await withAssertion(t, '/token', noKid, clientCredentials), client.client_id);
      const named = await assertion(t, client.client_id, ec);
      expectTokens(await withAssertion(t, '/token', named, clientCredentials, { client_id: client.client_id }), client.client_id);
      const list = await assertion(t, client.client_id, ec, { aud: ['https://elsewhere.example', `${t.config.issuer}/token`] });
      expectTokens(await withAssertion(t, '/token', list, clientCredentials), client.client_id);
    });

    it('the code flow, a refresh, introspection and revocation, each with a new assertion', async () => {
      const key = await signer('ES256');
      const client = await keyClient(t, [key], {
        grantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['https://client.example/cb'],
        trusted: true,
        scope: 'users:read orders:read',
      });
      const { browser } = await signedIn(t);
      const pkce = pkcePair();
      const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
      const tokens = await withAssertion(t, '/token', await assertion(t, client.client_id, key), {
        grant_type: 'authorization_code',
        code,
        code_verifier: pkce.verifier,
      });
      expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
      expect(tokens.body).toMatchObject({ token_type: 'Bearer', scope: 'users:read orders:read', refresh_token: expect.any(String) });

      const refreshed = await withAssertion(t, '/token', await assertion(t, client.client_id, key), {
        grant_type: 'refresh_token',
        refresh_token: tokens.body.refresh_token,
      });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);

      // aud may also be the endpoint called.
      const introspected = await withAssertion(
        t,
        '/introspect',
        await assertion(t, client.client_id, key, { aud: `${t.config.issuer}/introspect` }),
        { token: refreshed.body.access_token },
      );
      expect(introspected.status, JSON.stringify(introspected.body)).toBe(200);
      expect(introspected.body).toMatchObject({
        active: true,
        client_id: client.client_id,
        token_type: 'Bearer',
        scope: 'users:read orders:read',
      });

      const revoked = await withAssertion(t, '/revoke', await assertion(t, client.client_id, key), { token: refreshed.body.refresh_token });
      expect(revoked.status).toBe(200);
      expect(revoked.text).toBe('');
      const after = await withAssertion(t, '/introspect', await assertion(t, client.client_id, key), {
        token: refreshed.body.refresh_token,
      });
      expect(after.status).toBe(200);
      expect(after.body).toEqual({ active: false });
    });
  });

  describe('refuses with 401 invalid_client and an audit event', () => {
    let key: Signer;
    beforeAll(async () => {
      key = await signer('RS256');
    });
    const fresh = () => keyClient(t, [key]);

    it('an assertion presented a second time (same jti), even with a new signature', async () => {
      const client = await fresh();
      const jti = randomUUID();
      const first = await assertion(t, client.client_id, key, { jti });
      expectTokens(await withAssertion(t, '/token', first, clientCredentials), client.client_id);
      const replay = await withAssertion(t, '/token', first, clientCredentials);
      await expectRefused(replay, client.client_id, 'The client assertion was already used (jti).', first);
      // Another assertion with the same jti (a later exp): still the same id.
      const again = await assertion(t, client.client_id, key, { jti, exp: Math.floor(Date.now() / 1000) + 120 });
      await expectRefused(
        await withAssertion(t, '/revoke', again, { token: 'x' }),
        client.client_id,
        'The client assertion was already used (jti).',
      );
    });

    it('an aud that is not this server, or the URL of another endpoint than the one called', async () => {
      const client = await fresh();
      const elsewhere = await assertion(t, client.client_id, key, { aud: 'https://other-server.example/token' });
      await expectRefused(
        await withAssertion(t, '/token', elsewhere, clientCredentials),
        client.client_id,
        'The client assertion is not for this server (aud).',
      );
      const forRevoke = await assertion(t, client.client_id, key, { aud: `${t.config.issuer}/revoke` });
      await expectRefused(
        await withAssertion(t, '/token', forRevoke, clientCredentials),
        client.client_id,
        'The client assertion is not for this server (aud).',
      );
      const none = await assertion(t, client.client_id, key, { aud: undefined });
      await expectRefused(
        await withAssertion(t, '/token', none, clientCredentials),
        client.client_id,
        'The client assertion is not for this server (aud).',
      );
    });

    it('iss other than sub, or sub other than the client_id sent', async () => {
      const client = await fresh();
      const other = await fresh();
      const mixed = await assertion(t, client.client_id, key, { iss: other.client_id });
      await expectRefused(
        await withAssertion(t, '/token', mixed, clientCredentials),
        client.client_id,
        'The client assertion must have iss and sub equal to the client id.',
      );
      // Signed by a key both clients share, for `other`, presented as `client`.
      const forOther = await assertion(t, other.client_id, key);
      await expectRefused(
        await withAssertion(t, '/token', forOther, clientCredentials, { client_id: client.client_id }),
        client.client_id,
        'client_id does not match the client assertion.',
      );
    });

    it('an expired assertion, one valid for too long, one without exp, one without jti', async () => {
      const client = await fresh();
      const now = Math.floor(Date.now() / 1000);
      for (const [overrides, reason] of [
        [{ exp: now - 60, iat: now - 120 }, 'The client assertion has expired.'],
        [{ exp: now + 3600 }, 'The client assertion must expire within 300 seconds.'],
        [{ exp: undefined }, 'The client assertion has no exp.'],
        [{ jti: undefined }, 'The client assertion must have a jti of 1 to 256 characters.'],
        [{ jti: '' }, 'The client assertion must have a jti of 1 to 256 characters.'],
        [{ nbf: now + 600 }, 'The client assertion is not valid yet (nbf).'],
      ] as const) {
        const sent = await assertion(t, client.client_id, key, overrides);
        await expectRefused(await withAssertion(t, '/token', sent, clientCredentials), client.client_id, reason, sent);
      }
    });

    it('alg none, and HS256 signed with the public key as the secret', async () => {
      const client = await fresh();
      const unsigned = `${b64url({ alg: 'none', kid: key.kid })}.${b64url(claimsFor(t, client.client_id))}.`;
      const reason = 'The client assertion must be signed with one of RS256, ES256, EdDSA, Ed25519.';
      await expectRefused(await withAssertion(t, '/token', unsigned, clientCredentials), client.client_id, reason);
      const pem = createPublicKey({ key: key.jwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
      for (const secret of [pem, JSON.stringify(key.jwk)]) {
        const input = `${b64url({ alg: 'HS256', kid: key.kid })}.${b64url(claimsFor(t, client.client_id))}`;
        const mac = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
        await expectRefused(await withAssertion(t, '/token', mac, clientCredentials), client.client_id, reason);
      }
    });

    it('a signature by a key not in its JWKS (under a kid it has), and an algorithm that does not fit the key', async () => {
      const client = await fresh();
      const impostor = await signer('RS256', key.kid);
      const forged = await assertion(t, client.client_id, impostor);
      await expectRefused(
        await withAssertion(t, '/token', forged, clientCredentials),
        client.client_id,
        'The client assertion is not signed by a key of this client.',
      );
      // An EC key signing ES256 under the RSA key's kid: the RSA key cannot verify ES256.
      const ec = await signer('ES256', key.kid);
      const mismatched = await assertion(t, client.client_id, ec);
      await expectRefused(
        await withAssertion(t, '/token', mismatched, clientCredentials),
        client.client_id,
        'The client assertion is not signed by a key of this client.',
      );
      const garbage = await withAssertion(t, '/token', 'not-a-jwt', clientCredentials, { client_id: client.client_id });
      await expectRefused(garbage, client.client_id, 'The client assertion is not a signed JWT.');
    });

    it('an algorithm other than the one the client registered', async () => {
      const ec = await signer('ES256');
      const client = await keyClient(t, [key, ec], { tokenEndpointAuthSigningAlg: 'ES256' });
      expect(client.token_endpoint_auth_signing_alg).toBe('ES256');
      const rsa = await assertion(t, client.client_id, key);
      await expectRefused(
        await withAssertion(t, '/token', rsa, clientCredentials),
        client.client_id,
        'This client signs its assertions with ES256.',
      );
      expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, ec), clientCredentials), client.client_id);
    });

    it('a secret from a private_key_jwt client (it has none), and an assertion from a client with a secret', async () => {
      const client = await fresh();
      const post = await t
        .http()
        .post('/token')
        .type('form')
        .send(new URLSearchParams({ ...clientCredentials, client_id: client.client_id, client_secret: 'guess' }).toString());
      await expectRefused(post as unknown as Response, client.client_id, 'This client authenticates with private_key_jwt.');
      const basic = await t
        .http()
        .post('/token')
        .set('Authorization', basicAuth(client.client_id, ''))
        .type('form')
        .send(new URLSearchParams(clientCredentials).toString());
      expectOAuthError(basic as unknown as Response, 401, 'invalid_client');
      expect(basic.headers['www-authenticate']).toBe('Basic realm="oauth", charset="UTF-8"');

      const secretClient = await registerClient(t, { grantTypes: ['client_credentials'], redirectUris: [], scope: 'users:read' });
      const forSecretClient = await assertion(t, secretClient.client_id, key);
      await expectRefused(
        await withAssertion(t, '/token', forSecretClient, clientCredentials),
        secretClient.client_id,
        'This client does not authenticate with private_key_jwt.',
      );
    });

    it('another client_assertion_type; two methods at once is invalid_request', async () => {
      const client = await fresh();
      const sent = await assertion(t, client.client_id, key);
      const wrongType = await withAssertion(t, '/token', sent, clientCredentials, {
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
        client_id: client.client_id,
      });
      await expectRefused(wrongType, client.client_id, `client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE}.`);
      const both = await t
        .http()
        .post('/token')
        .set('Authorization', basicAuth(client.client_id, 'x'))
        .type('form')
        .send(
          new URLSearchParams({
            ...clientCredentials,
            client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
            client_assertion: sent,
          }).toString(),
        );
      expectOAuthError(both as unknown as Response, 400, 'invalid_request');
      // Neither attempt used the assertion up.
      expectTokens(await withAssertion(t, '/token', sent, clientCredentials), client.client_id);
    });
  });

  describe('the used assertion ids', () => {
    it('are kept until the assertion expires, then pruned; a deleted client takes its own along', async () => {
      const key = await signer('EdDSA');
      const client = await keyClient(t, [key]);
      const exp = Math.floor(Date.now() / 1000) + 60;
      expectTokens(
        await withAssertion(t, '/token', await assertion(t, client.client_id, key, { exp }), clientCredentials),
        client.client_id,
      );
      const db = t.app.get(DataSource);
      const count = async (clientId = client.client_id) =>
        Number(
          (
            (await db.query(
              `SELECT COUNT(*) AS n FROM client_assertion_jtis WHERE client_id = ${db.options.type === 'postgres' ? '$1' : '?'}`,
              [clientId],
            )) as { n: number | string }[]
          )[0].n,
        );
      expect(await count()).toBe(1);
      const rows = (await db.query('SELECT jti_hash, expires_at FROM client_assertion_jtis')) as { jti_hash: string; expires_at: string }[];
      // Stored as a hash, never the jti itself.
      expect(rows.every((row) => /^[0-9a-f]{64}$/.test(row.jti_hash))).toBe(true);
      const verifier = t.app.get(ClientAssertionVerifier);
      await verifier.prune((exp + 30) * 1000 - 1);
      expect(await count()).toBe(1);
      expect(await verifier.prune((exp + 31) * 1000)).toBeGreaterThanOrEqual(1);
      expect(await count()).toBe(0);

      const deleted = await keyClient(t, [key]);
      expectTokens(await withAssertion(t, '/token', await assertion(t, deleted.client_id, key), clientCredentials), deleted.client_id);
      expect(await count(deleted.client_id)).toBe(1);
      await t.app.get(ClientsService).remove(deleted.client_id);
      expect(await count(deleted.client_id)).toBe(0);
    });
  });

  describe('registering keys', () => {
    it('through the admin API: a JWK Set with private members is refused; keys can be replaced, and the old key stops working', async () => {
      const old = await signer('ES256');
      const { privateKey } = await generateKeyPair('ES256', { extractable: true });
      const leaked = { keys: [{ ...(await exportJWK(privateKey)), kid: 'leaked' }] };
      const refused = await t
        .http()
        .post('/admin/clients')
        .set(...bearer(auditToken))
        .send({
          name: 'Leaky',
          grant_types: ['client_credentials'],
          scope: 'users:read',
          token_endpoint_auth_method: 'private_key_jwt',
          jwks: leaked,
        });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body).toMatchObject({
        type: 'urn:problem-type:invalid-client-settings',
        detail: 'jwks key 1 holds private key members (d): give public keys only',
      });
      for (const [body, detail] of [
        [
          { jwks: jwksOf(old), jwks_uri: 'https://keys.example/jwks.json' },
          'private_key_jwt needs the public keys as either jwks or jwks_uri (one of them)',
        ],
        [{}, 'private_key_jwt needs the public keys as either jwks or jwks_uri (one of them)'],
        [{ jwks_uri: 'http://keys.example/jwks.json' }, 'jwks_uri must be an https URL'],
        [{ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, 'jwks key 1 holds private key members (k): give public keys only'],
        [{ jwks: { keys: Array.from({ length: 11 }, () => old.jwk) } }, 'jwks must hold 1 to 10 keys'],
        // Keys that would make every verification slow: refused before they are built.
        [{ jwks: { keys: [rsaJwk(3072, randomBytes(384))] } }, 'jwks key 1: an RSA key must have the public exponent 65537 (e AQAB)'],
        [{ jwks: { keys: [rsaJwk(8192)] } }, 'jwks key 1: an RSA key must have 2048 to 4096 bits'],
      ] as const) {
        const res = await t
          .http()
          .post('/admin/clients')
          .set(...bearer(auditToken))
          .send({
            name: 'Bad keys',
            grant_types: ['client_credentials'],
            scope: 'users:read',
            token_endpoint_auth_method: 'private_key_jwt',
            ...body,
          });
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.detail).toBe(detail);
      }

      const created = await t
        .http()
        .post('/admin/clients')
        .set(...bearer(auditToken))
        .send({
          name: 'Keyed',
          grant_types: ['client_credentials'],
          scope: 'users:read',
          token_endpoint_auth_method: 'private_key_jwt',
          jwks: jwksOf(old),
        });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toEqual({
        client_id: expect.any(String),
        name: 'Keyed',
        redirect_uris: [],
        scope: 'users:read',
        grant_types: ['client_credentials'],
        refresh_grace_seconds: 0,
        resources: [],
        post_logout_redirect_uris: [],
        public: false,
        trusted: false,
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: jwksOf(old),
      });
      const id = created.body.client_id as string;
      const rotated = await t
        .http()
        .post(`/admin/clients/${id}/secret`)
        .set(...bearer(auditToken));
      expect(rotated.status).toBe(400);
      expect(rotated.body.detail).toBe('a private_key_jwt client has no secret');

      const next = await signer('EdDSA');
      const updated = await t
        .http()
        .put(`/admin/clients/${id}`)
        .set(...bearer(auditToken))
        .send({ jwks: jwksOf(next) });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      expect(updated.body.jwks).toEqual(jwksOf(next));
      await expectRefused(
        await withAssertion(t, '/token', await assertion(t, id, old), clientCredentials),
        id,
        'The client assertion is not signed by a key of this client.',
      );
      expectTokens(await withAssertion(t, '/token', await assertion(t, id, next), clientCredentials), id);
    });

    it('through client:create --jwks-file and client:update: a client with a secret becomes a key client, and its secret stops working', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'jwks-'));
      const key = await signer('RS256');
      const file = join(dir, 'jwks.json');
      writeFileSync(file, JSON.stringify(jwksOf(key)));
      const printed: string[] = [];
      const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        printed.push(String(chunk));
        return true;
      });
      const clients = t.app.get(ClientsService);
      try {
        await new ClientCreateCommand(clients).run([], {
          name: 'Nightly export',
          grant: ['client_credentials'],
          scope: 'users:read',
          authMethod: 'private_key_jwt',
          jwksFile: file,
        });
        const secretClient = await registerClient(t, { grantTypes: ['client_credentials'], redirectUris: [], scope: 'users:read' });
        await new ClientUpdateCommand(clients).run([], {
          clientId: secretClient.client_id,
          authMethod: 'private_key_jwt',
          jwksUri: 'https://keys.example/jwks.json',
        });
        writeFileSync(file, '{not json');
        await expect(
          new ClientCreateCommand(clients).run([], { name: 'X', authMethod: 'private_key_jwt', jwksFile: file }),
        ).rejects.toThrow(`--jwks-file "${file}" is not JSON`);
        const created = JSON.parse(printed[0]) as ClientView;
        expect(created).toMatchObject({
          token_endpoint_auth_method: 'private_key_jwt',
          jwks: jwksOf(key),
          grant_types: ['client_credentials'],
        });
        expect(created).not.toHaveProperty('client_secret');
        const converted = JSON.parse(printed[1]) as ClientView;
        expect(converted).toMatchObject({
          client_id: secretClient.client_id,
          token_endpoint_auth_method: 'private_key_jwt',
          jwks_uri: 'https://keys.example/jwks.json',
        });
        write.mockRestore();
        expectTokens(await withAssertion(t, '/token', await assertion(t, created.client_id, key), clientCredentials), created.client_id);
        const oldSecret = await t
          .http()
          .post('/token')
          .set('Authorization', basicAuth(secretClient.client_id, secretClient.client_secret!))
          .type('form')
          .send(new URLSearchParams(clientCredentials).toString());
        expectOAuthError(oldSecret as unknown as Response, 401, 'invalid_client');
        expect(oldSecret.body.error_description).toBe('This client authenticates with private_key_jwt.');
      } finally {
        write.mockRestore();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});

describe('private_key_jwt across two instances sharing one database', () => {
  it('refuses at one instance an assertion already used at the other', async () => {
    const { a, b, close } = await createTwoInstances(NO_RATE_LIMITS);
    try {
      const key = await signer('ES256');
      const client = await keyClient(a, [key]);
      const sent = await assertion(a, client.client_id, key);
      expectTokens(await withAssertion(a, '/token', sent, clientCredentials), client.client_id);
      const replay = await withAssertion(b, '/token', sent, clientCredentials);
      expectOAuthError(replay, 401, 'invalid_client');
      expect(replay.body.error_description).toBe('The client assertion was already used (jti).');
      // b knows the client (it read it from the database) and accepts a fresh assertion.
      expectTokens(await withAssertion(b, '/token', await assertion(b, client.client_id, key), clientCredentials), client.client_id);
    } finally {
      await close();
    }
  });
});

describe('private_key_jwt through dynamic registration (REGISTRATION=token)', () => {
  const INITIAL_TOKEN = 'initial-access-token-0123456789abcdef';
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, REGISTRATION: 'token', REGISTRATION_INITIAL_TOKEN: INITIAL_TOKEN });
  });
  afterAll(() => t.close());

  const register = (body: object) =>
    t
      .http()
      .post('/register')
      .set(...bearer(INITIAL_TOKEN))
      .send(body);
  const metadata = { client_name: 'Agent', redirect_uris: ['https://agent.example/cb'], token_endpoint_auth_method: 'private_key_jwt' };

  it('registers a client with jwks (no secret), which then authenticates with an assertion', async () => {
    const key = await signer('EdDSA');
    const res = await register({ ...metadata, jwks: jwksOf(key), token_endpoint_auth_signing_alg: 'EdDSA' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: jwksOf(key),
      token_endpoint_auth_signing_alg: 'EdDSA',
      grant_types: ['authorization_code', 'refresh_token'],
    });
    expect(res.body).not.toHaveProperty('client_secret');
    expect(res.body).not.toHaveProperty('client_secret_expires_at');
    const read = await t
      .http()
      .get(new URL(res.body.registration_client_uri).pathname)
      .set(...bearer(res.body.registration_access_token));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) });

    const introspected = await withAssertion(t, '/introspect', await assertion(t, res.body.client_id, key), { token: 'not-a-token' });
    expect(introspected.status, JSON.stringify(introspected.body)).toBe(200);
    expect(introspected.body).toEqual({ active: false });
  });

  it('registers a client with jwks_uri (stored; fetched when it authenticates)', async () => {
    const res = await register({ ...metadata, jwks_uri: 'https://agent.example/.well-known/jwks.json' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://agent.example/.well-known/jwks.json',
    });
    expect(res.body).not.toHaveProperty('jwks');
  });

  it('refuses jwks and jwks_uri together, neither, a private key, and an http jwks_uri', async () => {
    const key = await signer('ES256');
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    for (const [body, description] of [
      [{ jwks: jwksOf(key), jwks_uri: 'https://agent.example/jwks.json' }, 'jwks and jwks_uri must not both be given.'],
      [{}, 'private_key_jwt needs the public keys as either jwks or jwks_uri (one of them)'],
      [
        { jwks: { keys: [await exportJWK(privateKey)] } },
        'jwks key 1 holds private key members (d, p, q, dp, dq, qi): give public keys only',
      ],
      [{ jwks_uri: 'http://agent.example/jwks.json' }, 'jwks_uri must be an https URL'],
      [
        { jwks: jwksOf(key), token_endpoint_auth_signing_alg: 'HS256' },
        'token_endpoint_auth_signing_alg must be one of: RS256, ES256, EdDSA, Ed25519',
      ],
    ] as const) {
      const res = await register({ ...metadata, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_client_metadata', error_description: description });
    }
  });
});

describe('private_key_jwt with a jwks_uri', () => {
  /** The client's key documents, served over https by a local server (its CA given to the app, localhost allowed). */
  const documents = new Map<string, unknown>();
  let keyServer: Awaited<ReturnType<typeof startDocumentServer>>;
  let t: TestApp;
  beforeAll(async () => {
    keyServer = await startDocumentServer();
    t = await createTestApp({ ...NO_RATE_LIMITS, CIMD_CA_FILE: keyServer.caFile, CIMD_ALLOWED_HOSTS: 'localhost' });
  });
  afterAll(async () => {
    await t?.close();
    await keyServer?.close();
  });

  /** A new key document URL on the local server, serving what `documents` holds for it at each request. */
  function keyDocument(): { url: string; path: string } {
    let url = '';
    const route = keyServer.server.route((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/jwk-set+json' }).end(JSON.stringify(documents.get(url)));
    });
    url = route.url;
    return route;
  }

  it('uses the keys it serves, refetches once on an unknown kid (a rotation), and not again within 30 seconds', async () => {
    const { url, path } = keyDocument();
    const first = await signer('ES256');
    documents.set(url, jwksOf(first));
    const client = await keyClient(t, [], { jwks: undefined, jwksUri: url });
    expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, first), clientCredentials), client.client_id);
    expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, first), clientCredentials), client.client_id);
    expect(keyServer.server.count(path)).toBe(1);

    const second = await signer('ES256');
    documents.set(url, jwksOf(first, second));
    expectTokens(await withAssertion(t, '/token', await assertion(t, client.client_id, second), clientCredentials), client.client_id);
    expect(keyServer.server.count(path)).toBe(2);

    // Unknown kids in a flood cost no further fetch for 30 seconds.
    const stranger = await signer('ES256');
    for (let i = 0; i < 3; i++) {
      const res = await withAssertion(t, '/token', await assertion(t, client.client_id, stranger), clientCredentials);
      expectOAuthError(res, 401, 'invalid_client');
      expect(res.body.error_description).toBe('The client assertion is not signed by a key of this client.');
    }
    expect(keyServer.server.count(path)).toBe(2);
  });

  it('takes nothing from a document holding a private key', async () => {
    const { url } = keyDocument();
    const key = await signer('ES256');
    documents.set(url, { keys: [{ ...(await exportJWK(key.privateKey)), kid: key.kid }] });
    const client = await keyClient(t, [], { jwks: undefined, jwksUri: url });
    const res = await withAssertion(t, '/token', await assertion(t, client.client_id, key), clientCredentials);
    expectOAuthError(res, 401, 'invalid_client');
    expect(res.body.error_description).toBe('The client assertion is not signed by a key of this client.');
  });

  it('fetches jwks_uri through the safe fetcher: a key document on a private address is refused', async () => {
    // 127.0.0.1 is not among the hosts allowed by name, so it is not fetched at all.
    const route = keyDocument();
    const key = await signer('ES256');
    documents.set(route.url, jwksOf(key));
    const privateUrl = route.url.replace('//localhost:', '//127.0.0.1:');
    const client = await keyClient(t, [], { jwks: undefined, jwksUri: privateUrl });
    const res = await withAssertion(t, '/token', await assertion(t, client.client_id, key), clientCredentials);
    expectOAuthError(res, 401, 'invalid_client');
    expect(keyServer.server.count(route.path)).toBe(0);
  });
});

describe('private_key_jwt from a standards-strict client library (oauth4webapi)', () => {
  let t: TestApp;
  let as: oauth.AuthorizationServer;
  const http = { [oauth.allowInsecureRequests]: true } as const;

  beforeAll(async () => {
    const listening = await createListeningTestApp(NO_RATE_LIMITS);
    t = listening;
    const issuer = new URL(listening.origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
  });
  afterAll(() => t.close());

  it.each(['RS256', 'ES256', 'Ed25519'] as const)('gets a token, introspects and revokes it with its %s assertions', async (alg) => {
    const key = await signer(alg);
    const view = await keyClient(t, [key]);
    const client: oauth.Client = { client_id: view.client_id };
    const auth = oauth.PrivateKeyJwt({ key: key.privateKey, kid: key.kid });
    const tokens = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(as, client, auth, new URLSearchParams({ scope: 'users:read' }), http),
    );
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'users:read', expires_in: 900 });
    const introspected = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, auth, tokens.access_token, http),
    );
    expect(introspected).toMatchObject({ active: true, client_id: view.client_id, scope: 'users:read' });
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, tokens.access_token, http));
  });
});

describe('the per-client rate limit of /token with private_key_jwt', () => {
  it("counts a request by its assertion's sub when it sends no client_id, from whatever address", async () => {
    const t = await createTestApp({ RATE_LIMIT_TOKEN: '2', TRUST_PROXY: '1' });
    try {
      const key = await signer('ES256');
      const client = await keyClient(t, [key]);
      const send = async (address: string, clientId = client.client_id) =>
        t
          .http()
          .post('/token')
          .set('X-Forwarded-For', address)
          .type('form')
          .send(
            new URLSearchParams({
              ...clientCredentials,
              client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
              client_assertion: await assertion(t, clientId, key),
            }).toString(),
          );
      expect((await send('203.0.113.1')).status).toBe(200);
      expect((await send('203.0.113.2')).status).toBe(200);
      const limited = await send('203.0.113.3');
      expect(limited.status).toBe(429);
      expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // Another client from a fresh address is not limited by this one's count.
      expect((await send('203.0.113.4', 'ghost-client')).status).toBe(401);
    } finally {
      await t.close();
    }
  });
});
