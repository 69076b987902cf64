import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { Client } from '../../src/oauth/entities/client.entity';
import { Browser, NO_RATE_LIMITS, authorizePath, decodeJwt, pkcePair, redirectParams, signedIn, sleep, token } from '../support/oauth';
import { type TestApp, type TestDatabase, bearer, createTestApp, createTestDatabase } from '../support/test-app';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { JWT_BEARER_ASSERTION_TYPE } from '../../src/oauth/client-auth/client-assertion';
import { DocumentServer, certificates, startDocumentServer } from '../support/document-server';

const CALLBACK = 'http://127.0.0.1:8765/callback';

function metadata(url: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client_id: url,
    client_name: 'Desk Agent',
    redirect_uris: [CALLBACK],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...overrides,
  };
}

function authorizeUrl(clientId: string, extra: Record<string, string> = {}): string {
  return authorizePath({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: CALLBACK,
    scope: 'users:read',
    state: 'st',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...extra,
  });
}

/** The error page every refused client ID URL gets: 400, HTML, no redirect, the reason in it. */
function expectErrorPage(res: Response, reason: RegExp | string): void {
  expect(res.status, res.text?.slice(0, 500)).toBe(400);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers.location).toBeUndefined();
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.text).toContain('Invalid authorization request');
  expect(res.text).toMatch(reason);
}

describe('client ID metadata documents (an https URL as client_id)', () => {
  const server = new DocumentServer();
  let caFile: string;
  /** Documents on localhost (allowed by name, so admitted at 127.0.0.1); 127.0.0.1 itself allowed and denied. */
  let t: TestApp;
  /** No allow list: only hosts whose every address is public. */
  let open: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    const { ca, key, cert } = await certificates();
    caFile = join(tmpdir(), `cimd-ca-${randomUUID()}.pem`);
    writeFileSync(caFile, ca);
    await server.start(key, cert);
    const common = { ...NO_RATE_LIMITS, CIMD_CA_FILE: caFile, CIMD_TIMEOUT_MS: '500', CIMD_FAILURE_CACHE_SECONDS: '30' };
    t = await createTestApp({
      ...common,
      CIMD_ALLOWED_HOSTS: 'localhost,127.0.0.1',
      CIMD_DENIED_HOSTS: '127.0.0.1',
      CIMD_CACHE_MIN_SECONDS: '1',
      CIMD_CACHE_MAX_SECONDS: '3600',
    });
    open = await createTestApp(common);
    ({ browser } = await signedIn(t));
  });

  afterAll(async () => {
    await t?.close();
    await open?.close();
    await server.stop();
    rmSync(caFile, { force: true });
  });

  it('advertises client_id_metadata_document_supported in both metadata documents', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const res = await t.http().get(path);
      expect(res.status).toBe(200);
      expect(res.body.client_id_metadata_document_supported).toBe(true);
    }
  });

  it('runs the code flow with a URL client: consent page with its name, hosts and a localhost warning, tokens, consent again next time', async () => {
    const doc = server.document((url) => metadata(url), { 'Cache-Control': 'max-age=300' });
    const pkce = pkcePair();
    const params = {
      response_type: 'code',
      client_id: doc.url,
      redirect_uri: CALLBACK,
      scope: 'users:read',
      state: 'st-1',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    };
    const page = await browser.get(authorizePath(params));
    expect(page.status, page.text.slice(0, 500)).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.text).toContain('<h1>Desk Agent wants access to your account</h1>');
    expect(page.text).toContain(`published by <strong>localhost:${server.port}</strong>`);
    expect(page.text).toContain('you go back to <strong>127.0.0.1:8765</strong>');
    expect(page.text).toContain('This application runs on your own computer');
    expect(server.count(doc.path)).toBe(1);

    const allowed = await browser.submit(page, { decision: 'allow' });
    expect(allowed.status).toBe(303);
    const q = redirectParams(allowed, CALLBACK);
    expect(q.get('state')).toBe('st-1');
    expect(q.get('iss')).toBe(t.config.issuer);
    const code = q.get('code')!;

    const client = { client_id: doc.url } as ClientView;
    const tokens = await token(
      t,
      client,
      { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: pkce.verifier },
      'none',
    );
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.headers['cache-control']).toBe('no-store');
    expect(tokens.body.token_type).toBe('Bearer');
    expect(tokens.body.scope).toBe('users:read');
    expect(typeof tokens.body.refresh_token).toBe('string');
    expect(decodeJwt(tokens.body.access_token).payload.client_id).toBe(doc.url);
    const resource = await t
      .http()
      .get('/api/resource')
      .set(...bearer(tokens.body.access_token));
    expect(resource.status).toBe(200);
    expect(resource.body.data.client_id).toBe(doc.url);

    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token }, 'none');
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.body.refresh_token);

    // Allowed before, asked again: what the URL serves may have changed hands since.
    const again = await browser.get(authorizePath({ ...params, code_challenge: pkcePair().challenge }));
    expect(again.status).toBe(200);
    expect(again.text).toContain('<h1>Desk Agent wants access to your account</h1>');
    // Within max-age the document is not fetched again.
    expect(server.count(doc.path)).toBe(1);

    // prompt=none cannot skip that page: an error page, not a redirect to the document's redirect URI.
    const silent = await browser.get(authorizePath({ ...params, prompt: 'none' }));
    expectErrorPage(silent, 'consent_required');
  });

  it('shows no localhost warning for a client with an https redirect URI', async () => {
    const doc = server.document((url) => metadata(url, { redirect_uris: ['https://agent.example/cb'] }));
    const page = await browser.get(authorizeUrl(doc.url, { redirect_uri: 'https://agent.example/cb' }));
    expect(page.status, page.text.slice(0, 500)).toBe(200);
    expect(page.text).toContain('you go back to <strong>agent.example</strong>');
    expect(page.text).not.toContain('This application runs on your own computer');
  });

  it('answers a document whose client_id is not its URL with an error page', async () => {
    const doc = server.document(() => metadata('https://elsewhere.example/client.json'));
    expectErrorPage(await browser.get(authorizeUrl(doc.url)), 'client_id of the document is not the URL it was fetched from');
  });

  it('refuses a redirect_uri the document does not list, with an error page (no redirect to it)', async () => {
    const doc = server.document((url) => metadata(url));
    const res = await browser.get(authorizeUrl(doc.url, { redirect_uri: 'https://attacker.example/cb' }));
    expectErrorPage(res, 'redirect_uri is not registered for this client.');
  });

  it('never fetches from a private address unless the host is allowed by name (name, IP literals, IPv4-mapped IPv6)', async () => {
    const doc = server.document((url) => metadata(url));
    const { browser: other } = await signedIn(open);
    expectErrorPage(await other.get(authorizeUrl(doc.url)), 'does not resolve to a public address');
    for (const host of ['127.0.0.1', '[::1]', '[::ffff:7f00:1]']) {
      const literal = doc.url.replace(`localhost:${server.port}`, `${host}:${server.port}`);
      expectErrorPage(await other.get(authorizeUrl(literal)), 'does not resolve to a public address');
    }
    expect(server.count(doc.path)).toBe(0);
  });

  it('refuses a host outside the allow list, and a denied host even when it is also allowed', async () => {
    const doc = server.document((url) => metadata(url), {}, '127.0.0.1');
    expectErrorPage(await browser.get(authorizeUrl(doc.url)), `the host 127.0.0.1 is denied`);
    const outside = `https://example.com/clients/${randomUUID()}.json`;
    expectErrorPage(await browser.get(authorizeUrl(outside)), 'the host example.com is not among the allowed hosts');
    expect(server.count(doc.path)).toBe(0);
  });

  it('does not follow a redirect from the document URL', async () => {
    const target = server.document((url) => metadata(url));
    const doc = server.route((_req, res) => res.writeHead(302, { Location: target.url }).end());
    expectErrorPage(await browser.get(authorizeUrl(doc.url)), 'answered 302: redirects are not followed');
    expect(server.count(doc.path)).toBe(1);
    expect(server.count(target.path)).toBe(0);
  });

  it('refuses an oversized document, by its Content-Length and by the bytes that arrive without one', async () => {
    const padding = 'x'.repeat(6_000);
    const declared = server.document((url) => metadata(url, { padding }));
    expectErrorPage(await browser.get(authorizeUrl(declared.url)), 'the answer is larger than 5120 bytes');
    let streamedUrl = '';
    const streamed = server.route((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const body = JSON.stringify(metadata(streamedUrl, { padding }));
      for (let i = 0; i < body.length; i += 1_000) res.write(body.slice(i, i + 1_000));
      res.end();
    });
    streamedUrl = streamed.url;
    expectErrorPage(await browser.get(authorizeUrl(streamed.url)), 'the answer is larger than 5120 bytes');
    let lyingUrl = '';
    const lying = server.route((req, res) => {
      // Content-Length says little, the body is large: the socket gets the whole lie, the limit still holds.
      const body = JSON.stringify(metadata(lyingUrl, { padding }));
      res.socket!.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n${body}`);
      void req;
    });
    lyingUrl = lying.url;
    expectErrorPage(await browser.get(authorizeUrl(lying.url)), /not valid JSON|larger than 5120 bytes|the connection failed/);
  });

  it('gives up on a slow document at the timeout', async () => {
    let url = '';
    const slow = server.route((_req, res) => {
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(metadata(url))), 2_000);
    });
    url = slow.url;
    const started = Date.now();
    const res = await browser.get(authorizeUrl(slow.url));
    const elapsed = Date.now() - started;
    expectErrorPage(res, 'no complete answer within 500 ms');
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(1_500);
  });

  it('treats a plain http client_id as an unknown client, without fetching it', async () => {
    const doc = server.document((url) => metadata(url));
    const http = doc.url.replace('https://', 'http://');
    expectErrorPage(await browser.get(authorizeUrl(http)), 'The client (client_id) is not registered.');
    expect(server.count(doc.path)).toBe(0);
  });

  it('refuses client ID URLs the draft rules out (no path, fragment, user info, dot segments) without fetching', async () => {
    const base = `https://localhost:${server.port}`;
    const fetches = () => [...server.hits.values()].reduce((a, b) => a + b, 0);
    const before = fetches();
    for (const bad of [`${base}/`, `${base}/a#frag`, `https://user:pw@localhost:${server.port}/a`, `${base}/a/%2e%2e/b`, `${base}/a/./b`]) {
      expectErrorPage(await browser.get(authorizeUrl(bad)), 'The client (client_id) is not registered.');
    }
    expect(fetches()).toBe(before);
  });

  it('refuses a document that is not JSON, or not valid JSON', async () => {
    const html = server.route((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html></html>'));
    expectErrorPage(await browser.get(authorizeUrl(html.url)), 'the answer is not application/json');
    const broken = server.route((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"client_id":'));
    expectErrorPage(await browser.get(authorizeUrl(broken.url)), 'the answer is not valid JSON');
  });

  it('refuses documents with a secret, a shared-secret method, other grants or no name', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ client_secret: 's3cret' }, 'must not hold a client_secret'],
      [{ token_endpoint_auth_method: 'client_secret_basic' }, 'token_endpoint_auth_method client_secret_basic needs a shared secret'],
      [{ token_endpoint_auth_method: 'private_key_jwt' }, 'private_key_jwt needs jwks or jwks_uri'],
      [{ grant_types: ['authorization_code', 'client_credentials'] }, 'grant_types must be among: authorization_code, refresh_token'],
      [{ client_name: undefined }, 'client_name must be one line of 1 to 100 characters'],
      [{ redirect_uris: ['javascript:alert(1)'] }, 'a redirect URI must be https, or http on a loopback address'],
    ];
    for (const [overrides, reason] of cases) {
      const doc = server.document((url) => metadata(url, overrides));
      expectErrorPage(await browser.get(authorizeUrl(doc.url)), reason);
    }
  });

  it('limits a client to the scopes its document names', async () => {
    const doc = server.document((url) => metadata(url, { scope: 'orders:read unknown:scope' }));
    const res = await browser.get(authorizeUrl(doc.url, { scope: 'users:read' }));
    // The client chose its redirect URI itself: the error is shown, not redirected there.
    expectErrorPage(res, 'invalid_scope: Scope not allowed for this client: users:read');
    // With a link there the person may choose to follow: the error, state and iss, as a redirect would carry them.
    const error = new URLSearchParams({ error: 'invalid_scope', error_description: 'Scope not allowed for this client: users:read' });
    expect(res.text).toContain(`<a href="${CALLBACK}?${error.toString().replace('&', '&amp;')}&amp;state=st&amp;iss=`);
    const ok = await browser.get(authorizeUrl(doc.url, { scope: 'orders:read' }));
    expect(ok.status).toBe(200);
  });

  it('keeps a private_key_jwt client without a secret: it cannot authenticate with none', async () => {
    const doc = server.document((url) =>
      metadata(url, { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://agent.example/jwks.json' }),
    );
    const page = await browser.get(authorizeUrl(doc.url));
    expect(page.status).toBe(200);
    const res = await token(t, { client_id: doc.url } as ClientView, { grant_type: 'authorization_code', code: 'x' }, 'none');
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
  });

  it('reuses a no-store document for the minimum time only, then fetches it again', async () => {
    const doc = server.document((url) => metadata(url), { 'Cache-Control': 'no-store' });
    expect((await browser.get(authorizeUrl(doc.url))).status).toBe(200);
    expect((await browser.get(authorizeUrl(doc.url))).status).toBe(200);
    expect(server.count(doc.path)).toBe(1);
    await sleep(1_100);
    expect((await browser.get(authorizeUrl(doc.url))).status).toBe(200);
    expect(server.count(doc.path)).toBe(2);
  });

  it('remembers a failure, so a flood of requests naming a broken document costs one fetch', async () => {
    const broken = server.route((_req, res) => res.writeHead(500).end());
    for (let i = 0; i < 5; i += 1) expectErrorPage(await browser.get(authorizeUrl(broken.url)), 'answered 500');
    expect(server.count(broken.path)).toBe(1);
  });

  it('shares one fetch between concurrent requests for one document', async () => {
    let url = '';
    const slow = server.route((_req, res) => {
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(metadata(url))), 200);
    });
    url = slow.url;
    const answers = await Promise.all(Array.from({ length: 5 }, () => browser.get(authorizeUrl(slow.url))));
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200, 200]);
    expect(server.count(slow.path)).toBe(1);
  });

  it('verifies the certificate: without the CA setting the same document is refused', async () => {
    const doc = server.document((url) => metadata(url));
    const strict = await createTestApp({ CIMD_ALLOWED_HOSTS: 'localhost' });
    try {
      const { browser: other } = await signedIn(strict);
      expectErrorPage(await other.get(authorizeUrl(doc.url)), 'the connection failed (UNABLE_TO_VERIFY_LEAF_SIGNATURE)');
      expect((await browser.get(authorizeUrl(doc.url))).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('writes a URL client only when a person allows it; keeps it out of the admin API; the audit trail finds it by its URL', async () => {
    const doc = server.document((url) => metadata(url));
    const admin = await t.createUser({ role: 'admin' });
    const auditToken = await t.token(admin.id, ['audit:read']);
    const eventsOf = async () => {
      const res = await t
        .http()
        .get('/admin/audit-events')
        .query({ client_id: doc.url })
        .set(...bearer(auditToken));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data as unknown[];
    };
    const rows = () => t.app.get(DataSource).query(`SELECT id FROM clients WHERE id = '${doc.url}'`) as Promise<unknown[]>;

    // Anyone may name any URL at /authorize: that alone writes nothing (no row, no event).
    const page = await browser.get(authorizeUrl(doc.url));
    expect(page.status).toBe(200);
    expect(await rows()).toEqual([]);
    expect(await eventsOf()).toEqual([]);
    // Denying writes no client either.
    expect((await browser.submit(page, { decision: 'deny' })).status).toBe(303);
    expect(await rows()).toEqual([]);
    // Allowing does, once.
    const again = await browser.get(authorizeUrl(doc.url));
    expect((await browser.submit(again, { decision: 'allow' })).status).toBe(303);
    expect(await rows()).toEqual([{ id: doc.url }]);

    const adminToken = await t.token(admin.id, ['clients:admin']);
    const list = await t
      .http()
      .get('/admin/clients?limit=100')
      .set(...bearer(adminToken));
    expect(list.status).toBe(200);
    expect(list.body.data.map((c: { client_id: string }) => c.client_id)).not.toContain(doc.url);
    const one = await t
      .http()
      .get(`/admin/clients/${encodeURIComponent(doc.url)}`)
      .set(...bearer(adminToken));
    expect(one.status).toBe(404);
    expect(one.headers['content-type']).toMatch(/^application\/problem\+json/);

    expect((await eventsOf()).filter((e) => (e as { type: string }).type.startsWith('client.'))).toEqual([
      expect.objectContaining({
        type: 'client.created',
        client_id: doc.url,
        actor: 'system',
        details: expect.objectContaining({ via: 'client ID metadata document' }),
      }),
    ]);
  });
  it('follows a changed document: the row takes its new name, with one client.updated event', async () => {
    let name = 'Desk Agent';
    const doc = server.document((url) => metadata(url, { client_name: name }), { 'Cache-Control': 'no-store' });
    const admin = await t.createUser({ role: 'admin' });
    const auditToken = await t.token(admin.id, ['audit:read']);
    const clientEvents = async () => {
      const res = await t
        .http()
        .get('/admin/audit-events')
        .query({ client_id: doc.url, order: 'asc' })
        .set(...bearer(auditToken));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.data as { type: string }[]).map((e) => e.type).filter((type) => type.startsWith('client.'));
    };
    const stored = () => t.app.get(DataSource).getRepository(Client).findOneByOrFail({ id: doc.url });
    const allow = async () => {
      const page = await browser.get(authorizeUrl(doc.url));
      expect(page.status).toBe(200);
      expect((await browser.submit(page, { decision: 'allow' })).status).toBe(303);
    };

    await allow();
    expect((await stored()).name).toBe('Desk Agent');
    const document = (await stored()).metadataDocument;
    name = 'Desk Agent 2';
    await sleep(1_100); // the no-store document's minimum time in the cache
    await allow();
    const changed = await stored();
    expect(changed.name).toBe('Desk Agent 2');
    expect(changed.metadataDocument).not.toBe(document);
    expect(changed.redirectUris).toEqual([CALLBACK]);
    expect(changed.grantTypes).toEqual(['authorization_code', 'refresh_token']);
    expect(await clientEvents()).toEqual(['client.created', 'client.updated']);
  });
});

describe('client ID metadata documents turned off', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ CLIENT_ID_METADATA_DOCUMENTS: 'off' });
  });
  afterAll(() => t.close());

  it('does not advertise them and treats a URL client_id as an unknown client', async () => {
    const metadataRes = await t.http().get('/.well-known/oauth-authorization-server');
    expect(metadataRes.status).toBe(200);
    expect(metadataRes.body.client_id_metadata_document_supported).toBeUndefined();
    const { browser } = await signedIn(t);
    expectErrorPage(await browser.get(authorizeUrl('https://agent.example/client.json')), 'The client (client_id) is not registered.');
  });
});

/**
 * A metadata-document client that signs instead of using PKCE alone (`private_key_jwt` with the document's `jwks`),
 * across two instances on one database: the authorization on one, the token request on the other (its first sight
 * of the client is the row the first one wrote), and its assertion usable once across both.
 */
describe('a client ID metadata document with private_key_jwt, across two instances', () => {
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  /** A third instance whose operator has since denied the document's host. */
  let denying: TestApp;

  beforeAll(async () => {
    documents = await startDocumentServer();
    db = await createTestDatabase();
    const env = { ...NO_RATE_LIMITS, CIMD_CA_FILE: documents.caFile, CIMD_ALLOWED_HOSTS: 'localhost' };
    a = await createTestApp(env, db);
    b = await createTestApp(env, db);
    denying = await createTestApp({ ...env, CIMD_DENIED_HOSTS: 'localhost' }, db);
  });
  afterAll(async () => {
    await denying?.close();
    await b?.close();
    await a?.close();
    await db?.drop();
    await documents?.close();
  });

  it('authorizes on one instance, authenticates by its key on the other, and its assertion works once', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'agent-key-1' };
    const doc = documents.server.document((url) =>
      metadata(url, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] }, token_endpoint_auth_signing_alg: 'ES256' }),
    );
    // A document that carries a private key is refused outright.
    const privateJwk = { ...(await exportJWK(privateKey)), kid: 'k' };
    const leaky = documents.server.document((url) =>
      metadata(url, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [privateJwk] } }),
    );

    const { browser } = await signedIn(a);
    expectErrorPage(await browser.get(authorizeUrl(leaky.url)), 'holds private key members (d): give public keys only');
    const pkce = pkcePair();
    const page = await browser.get(authorizeUrl(doc.url, { code_challenge: pkce.challenge }));
    expect(page.status, page.text.slice(0, 500)).toBe(200);
    const code = redirectParams(await browser.submit(page, { decision: 'allow' }), CALLBACK).get('code')!;

    const now = Math.floor(Date.now() / 1000);
    const signed = await new SignJWT({ iss: doc.url, sub: doc.url, aud: b.config.issuer, iat: now, exp: now + 60, jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid })
      .sign(privateKey);
    const form = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      code_verifier: pkce.verifier,
      client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
      client_assertion: signed,
    };
    // Without the assertion: this client is not public.
    const unauthenticated = await b
      .http()
      .post('/token')
      .type('form')
      .send(new URLSearchParams({ ...form, client_assertion_type: '', client_assertion: '', client_id: doc.url }).toString());
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body.error).toBe('invalid_client');

    const tokens = await b.http().post('/token').type('form').send(new URLSearchParams(form).toString());
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(decodeJwt(tokens.body.access_token).payload.client_id).toBe(doc.url);
    // The same assertion again, on the other instance: a replay.
    const replayed = await a
      .http()
      .post('/introspect')
      .type('form')
      .send(
        new URLSearchParams({
          token: tokens.body.access_token,
          client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
          client_assertion: signed,
        }).toString(),
      );
    expect(replayed.status).toBe(401);
    expect(replayed.body.error).toBe('invalid_client');

    // Once the operator denies the document's host, the client is unknown at the token endpoints too (its stored
    // row and refresh tokens notwithstanding), not only at /authorize.
    const fresh = await new SignJWT({ iss: doc.url, sub: doc.url, aud: denying.config.issuer, iat: now, exp: now + 60, jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid })
      .sign(privateKey);
    const denied = await denying
      .http()
      .post('/token')
      .type('form')
      .send(
        new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: tokens.body.refresh_token,
          client_assertion_type: JWT_BEARER_ASSERTION_TYPE,
          client_assertion: fresh,
        }).toString(),
      );
    expect(denied.status).toBe(401);
    expect(denied.body.error).toBe('invalid_client');
  });
});
