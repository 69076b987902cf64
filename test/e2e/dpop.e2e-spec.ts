import { createHash, randomUUID } from 'node:crypto';
import { type CryptoKey, type JWK, SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  REDIRECT_URI,
  b64url,
  decodeJwt,
  expectOAuthError,
  pushCodeRequest,
  registerClient,
  signedIn,
  token,
} from '../support/oauth';
import { type TestApp, type TestDatabase, createListeningTestApp, createTestApp, createTestDatabase } from '../support/test-app';

const ALGS = 'ES256 EdDSA Ed25519 RS256 PS256';
const http = { [oauth.allowInsecureRequests]: true } as const;

/** A DPoP key pair of the test's own, its public JWK and thumbprint. */
async function dpopKey(alg = 'ES256') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return {
    privateKey,
    publicKey,
    jwk,
    jkt: await calculateJwkThumbprint(jwk),
    pair: { privateKey, publicKey } as Parameters<typeof oauth.DPoP>[1],
  };
}

/** A DPoP proof made by hand, for the attacks oauth4webapi would never make. */
async function proof(
  key: { privateKey: CryptoKey; jwk: JWK },
  claims: { htm: string; htu: string; ath?: string; nonce?: string; jti?: string; iat?: number },
  header: { typ?: string; alg?: string; jwk?: JWK } = {},
): Promise<string> {
  return new SignJWT({ jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })
    .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk, ...header })
    .sign(key.privateKey);
}

function ath(accessToken: string): string {
  return b64url(createHash('sha256').update(accessToken).digest());
}

/**
 * DPoP (RFC 9449), driven by oauth4webapi where a real client would be: tokens bound to the client's key at every
 * grant, the resource server's checks and challenges, refresh tokens of public clients bound too, nonces, and the
 * attacks — a replayed proof (on another instance too), a proof for another URL or method, a private key in the
 * proof, a stolen bound token sent as a bearer token or with another key's proof.
 */
describe('DPoP (RFC 9449, oauth4webapi)', () => {
  let db: TestDatabase;
  let a: TestApp & { origin: string };
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createListeningTestApp(NO_RATE_LIMITS, '127.0.0.1', db);
    const issuer = new URL(a.origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
  });
  afterAll(async () => {
    await a.close();
    await db.drop();
  });

  const clientOf = (view: ClientView): oauth.Client => ({ client_id: view.client_id });
  const authOf = (view: ClientView) => (view.client_secret ? oauth.ClientSecretBasic(view.client_secret) : oauth.None());

  /** The code flow of a signed-in browser, the token request with `dpop` (oauth4webapi): the token response. */
  async function codeFlow(view: ClientView, dpop?: oauth.DPoPHandle) {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const { browser } = await signedIn(a);
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: view.client_id,
      redirect_uri: REDIRECT_URI,
      scope: 'orders:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const res = await browser.get(`/authorize?${query}`);
    expect(res.status).toBe(302);
    const params = oauth.validateAuthResponse(as, clientOf(view), new URL(res.headers.location), state);
    const options = { ...http, ...(dpop ? { DPoP: dpop } : {}) };
    return oauth.authorizationCodeGrantRequest(as, clientOf(view), authOf(view), params, REDIRECT_URI, verifier, options);
  }

  it('publishes the proof algorithms in both metadata documents', async () => {
    expect(as.dpop_signing_alg_values_supported).toEqual(ALGS.split(' '));
    const resource = await a.http().get('/.well-known/oauth-protected-resource');
    expect(resource.status).toBe(200);
    expect(resource.body.dpop_signing_alg_values_supported).toEqual(ALGS.split(' '));
    expect(resource.body.dpop_bound_access_tokens_required).toBe(false);
  });

  it('binds the code flow tokens to the key, and the resource API takes them only with a proof of that key', async () => {
    const view = await registerClient(a, { trusted: true, isPublic: true });
    const key = await dpopKey();
    const dpop = oauth.DPoP(clientOf(view), key.pair);
    const tokens = await oauth.processAuthorizationCodeResponse(as, clientOf(view), await codeFlow(view, dpop));
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).payload.cnf).toEqual({ jkt: key.jkt });

    const url = new URL('/api/resource', a.origin);
    const ok = await oauth.protectedResourceRequest(tokens.access_token, 'GET', url, undefined, undefined, { DPoP: dpop, ...http });
    expect(ok.status).toBe(200);

    // Stolen and sent as a bearer token: refused, with the DPoP challenge.
    const asBearer = await a.http().get('/api/resource').set('Authorization', `Bearer ${tokens.access_token}`);
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers['www-authenticate']).toBe(
      `DPoP error="invalid_token", error_description="This access token is bound to a key: send it with the DPoP scheme and a DPoP proof.", algs="${ALGS}", resource_metadata="${a.config.resourceMetadataUrl}"`,
    );
    expect(asBearer.body.type).toBe('urn:problem-type:invalid-token');

    // Stolen and sent with the thief's own key: the proof is valid, but not of the token's key.
    const thief = await dpopKey();
    const htu = `${a.origin}/api/resource`;
    const withOtherKey = await a
      .http()
      .get('/api/resource')
      .set('Authorization', `DPoP ${tokens.access_token}`)
      .set('DPoP', await proof(thief, { htm: 'GET', htu, ath: ath(tokens.access_token) }));
    expect(withOtherKey.status).toBe(401);
    expect(withOtherKey.headers['www-authenticate']).toMatch(
      /^DPoP error="invalid_dpop_proof", error_description="[^"]+", algs="ES256 EdDSA Ed25519 RS256 PS256", resource_metadata="[^"]+"$/,
    );

    // No proof at all.
    const noProof = await a.http().get('/api/resource').set('Authorization', `DPoP ${tokens.access_token}`);
    expect(noProof.status).toBe(401);
    expect(noProof.headers['www-authenticate']).toBe(
      `DPoP error="invalid_dpop_proof", error_description="A DPoP proof is required (the DPoP header).", algs="${ALGS}", resource_metadata="${a.config.resourceMetadataUrl}"`,
    );

    // A proof replayed, for another URL, for another method, without or with another ath.
    const once = await proof(key, { htm: 'GET', htu, ath: ath(tokens.access_token) });
    const first = await a.http().get('/api/resource').set('Authorization', `DPoP ${tokens.access_token}`).set('DPoP', once);
    expect(first.status).toBe(200);
    const replay = await a.http().get('/api/resource').set('Authorization', `DPoP ${tokens.access_token}`).set('DPoP', once);
    expect(replay.status).toBe(401);
    expect(replay.headers['www-authenticate']).toContain('error_description="The DPoP proof was already used (jti)."');
    const cases = [
      await proof(key, { htm: 'GET', htu: `${a.origin}/api/users`, ath: ath(tokens.access_token) }),
      await proof(key, { htm: 'POST', htu, ath: ath(tokens.access_token) }),
      await proof(key, { htm: 'GET', htu }),
      await proof(key, { htm: 'GET', htu, ath: ath('another token') }),
      await proof(key, { htm: 'GET', htu, ath: ath(tokens.access_token), iat: Math.floor(Date.now() / 1000) - 600 }),
    ];
    for (const bad of cases) {
      const res = await a.http().get('/api/resource').set('Authorization', `DPoP ${tokens.access_token}`).set('DPoP', bad);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^DPoP error="invalid_dpop_proof"/);
      expect(res.body.type).toBe('urn:problem-type:invalid-dpop-proof');
    }
    // The query string and fragment are not part of htu (RFC 9449 4.3).
    const withQuery = await a
      .http()
      .get('/api/resource')
      .set('Authorization', `DPoP ${tokens.access_token}`)
      .set('DPoP', await proof(key, { htm: 'GET', htu: `${htu}?y=2#z`, ath: ath(tokens.access_token) }));
    expect(withQuery.status).toBe(200);
  });

  it("binds a public client's refresh tokens to its key: refreshing needs a proof of that key", async () => {
    const view = await registerClient(a, { trusted: true, isPublic: true });
    const key = await dpopKey();
    const dpop = oauth.DPoP(clientOf(view), key.pair);
    const tokens = await oauth.processAuthorizationCodeResponse(as, clientOf(view), await codeFlow(view, dpop));

    const withoutProof = await token(a, view, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expectOAuthError(withoutProof, 400, 'invalid_grant');
    expect(withoutProof.body.error_description).toBe('This refresh token is bound to a key: present a DPoP proof of that key.');
    const thief = oauth.DPoP(clientOf(view), (await dpopKey()).pair);
    const withOtherKey = await oauth.refreshTokenGrantRequest(as, clientOf(view), authOf(view), tokens.refresh_token!, {
      DPoP: thief,
      ...http,
    });
    expect(withOtherKey.status).toBe(400);
    expect(((await withOtherKey.json()) as { error: string }).error).toBe('invalid_grant');

    // Neither attempt used it up: the holder of the key refreshes, and the successor is bound as well.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      clientOf(view),
      await oauth.refreshTokenGrantRequest(as, clientOf(view), authOf(view), tokens.refresh_token!, { DPoP: dpop, ...http }),
    );
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token).payload.cnf).toEqual({ jkt: key.jkt });
    const successorWithoutProof = await token(a, view, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token! });
    expectOAuthError(successorWithoutProof, 400, 'invalid_grant');
  });

  it("leaves a confidential client's refresh token unbound, binds each access token to the proof's key, and introspection reports cnf", async () => {
    const view = await registerClient(a, { trusted: true });
    const key = await dpopKey();
    const dpop = oauth.DPoP(clientOf(view), key.pair);
    const tokens = await oauth.processAuthorizationCodeResponse(as, clientOf(view), await codeFlow(view, dpop));
    const introspected = await a
      .http()
      .post('/introspect')
      .auth(view.client_id, view.client_secret!)
      .type('form')
      .send({ token: tokens.access_token });
    expect(introspected.status).toBe(200);
    expect(introspected.body.token_type).toBe('DPoP');
    expect(introspected.body.cnf).toEqual({ jkt: key.jkt });
    const refreshIntrospected = await a
      .http()
      .post('/introspect')
      .auth(view.client_id, view.client_secret!)
      .type('form')
      .send({ token: tokens.refresh_token });
    expect(refreshIntrospected.body.token_type).toBe('refresh_token');
    expect(refreshIntrospected.body.cnf).toBeUndefined();

    // Refreshed without a proof: a bearer access token.
    const bearer = await token(a, view, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expect(bearer.status).toBe(200);
    expect(bearer.body.token_type).toBe('Bearer');
    expect(decodeJwt(bearer.body.access_token).payload.cnf).toBeUndefined();
  });

  it('binds client-credentials tokens, and a bound subject token is exchanged only with a proof of its key', async () => {
    const view = await registerClient(a, {
      grantTypes: ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      scope: 'orders:read users:read',
      trusted: true,
    });
    const key = await dpopKey('EdDSA');
    const dpop = oauth.DPoP(clientOf(view), key.pair);
    const own = await oauth.processClientCredentialsResponse(
      as,
      clientOf(view),
      await oauth.clientCredentialsGrantRequest(as, clientOf(view), authOf(view), { scope: 'users:read' }, { DPoP: dpop, ...http }),
    );
    expect(own.token_type).toBe('dpop');
    expect(decodeJwt(own.access_token).payload.cnf).toEqual({ jkt: key.jkt });

    const person = await oauth.processAuthorizationCodeResponse(as, clientOf(view), await codeFlow(view, dpop));
    const exchange = {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: person.access_token,
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    };
    const stolen = await token(a, view, exchange);
    expectOAuthError(stolen, 400, 'invalid_grant');
    expect(stolen.body.error_description).toBe('The subject_token is bound to a key: present a DPoP proof of that key.');
    const htu = `${a.origin}/token`;
    const exchanged = await a
      .http()
      .post('/token')
      .auth(view.client_id, view.client_secret!)
      .set('DPoP', await proof(key, { htm: 'POST', htu }, { alg: 'EdDSA' }))
      .type('form')
      .send(exchange);
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect(exchanged.body.token_type).toBe('DPoP');
    expect(decodeJwt(exchanged.body.access_token).payload.cnf).toEqual({ jkt: key.jkt });
  });

  it('refuses proofs a client library would never make at /token: private key, wrong typ or alg, another URL or method, stale, two proofs', async () => {
    const view = await registerClient(a, { grantTypes: ['client_credentials'], scope: 'users:read' });
    const key = await dpopKey();
    const htu = `${a.origin}/token`;
    const privateJwk = await exportJWK(key.privateKey);
    const hmacKey = new TextEncoder().encode('a'.repeat(32));
    const attempts: [string, string | string[], string][] = [
      ['private key in jwk', await proof(key, { htm: 'POST', htu }, { jwk: privateJwk }), "The DPoP proof's jwk must be a public key."],
      ['typ JWT', await proof(key, { htm: 'POST', htu }, { typ: 'JWT' }), 'The DPoP proof must have typ dpop+jwt.'],
      [
        'alg HS256',
        await new SignJWT({ jti: randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) })
          .setProtectedHeader({ typ: 'dpop+jwt', alg: 'HS256', jwk: key.jwk })
          .sign(hmacKey),
        "The DPoP proof's alg must be one of ES256, EdDSA, Ed25519, RS256, PS256.",
      ],
      ['another URL', await proof(key, { htm: 'POST', htu: `${a.origin}/par` }), `The DPoP proof is for another URL (htu must be ${htu}).`],
      ['another method', await proof(key, { htm: 'GET', htu }), 'The DPoP proof is for another method (htm must be POST).'],
      [
        'two proofs',
        [await proof(key, { htm: 'POST', htu }), await proof(key, { htm: 'POST', htu })],
        'Exactly one DPoP proof is allowed.',
      ],
      ['not a JWS', 'not-a-proof', 'The DPoP proof is not a JWS.'],
    ];
    for (const [name, header, description] of attempts) {
      const res = await a
        .http()
        .post('/token')
        .auth(view.client_id, view.client_secret!)
        .set('DPoP', header as string)
        .type('form')
        .send({ grant_type: 'client_credentials' });
      expectOAuthError(res, 400, 'invalid_dpop_proof');
      expect(res.body.error_description, name).toBe(description);
    }
    const stale = await a
      .http()
      .post('/token')
      .auth(view.client_id, view.client_secret!)
      .set('DPoP', await proof(key, { htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) - 300 }))
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectOAuthError(stale, 400, 'invalid_dpop_proof');
  });

  it('binds the code to the key of a proof at /par or of dpop_jkt at /authorize: its redemption needs that key (RFC 9449 10)', async () => {
    const view = await registerClient(a, { trusted: true });
    const key = await dpopKey();
    const dpop = oauth.DPoP(clientOf(view), key.pair);
    const { browser } = await signedIn(a);
    /** A pushed request (with `options`), the browser's code for it, and the PKCE verifier. */
    async function pushedCode(params: Record<string, string>, options: oauth.PushedAuthorizationRequestOptions = {}) {
      const {
        response: pushed,
        verifier,
        state,
      } = await pushCodeRequest(as, clientOf(view), authOf(view), params, {
        ...http,
        ...options,
      });
      const { request_uri } = await oauth.processPushedAuthorizationResponse(as, clientOf(view), pushed);
      const res = await browser.get(
        `/authorize?client_id=${encodeURIComponent(view.client_id)}&request_uri=${encodeURIComponent(request_uri)}`,
      );
      return { params: oauth.validateAuthResponse(as, clientOf(view), new URL(res.headers.location), state), verifier };
    }
    const redeem = (code: { params: URLSearchParams; verifier: string }, options: oauth.TokenEndpointRequestOptions = {}) =>
      oauth.authorizationCodeGrantRequest(as, clientOf(view), authOf(view), code.params, REDIRECT_URI, code.verifier, {
        ...http,
        ...options,
      });

    const bound = await pushedCode({}, { DPoP: dpop });
    const tokens = await oauth.processAuthorizationCodeResponse(as, clientOf(view), await redeem(bound, { DPoP: dpop }));
    expect(decodeJwt(tokens.access_token).payload.cnf).toEqual({ jkt: key.jkt });

    // Stolen with the code: without a proof, or with the thief's key, the code yields nothing (and is used up).
    const stolen = await redeem(await pushedCode({}, { DPoP: dpop }));
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'This authorization code is bound to a key: present a DPoP proof of that key.',
    });
    const thief = oauth.DPoP(clientOf(view), (await dpopKey()).pair);
    const withOtherKey = await redeem(await pushedCode({ dpop_jkt: key.jkt }), { DPoP: thief });
    expect(withOtherKey.status).toBe(400);
    expect(((await withOtherKey.json()) as { error: string }).error).toBe('invalid_grant');

    // dpop_jkt naming another key than the proof's at /par.
    const mismatch = await a
      .http()
      .post('/par')
      .auth(view.client_id, view.client_secret!)
      .set('DPoP', await proof(key, { htm: 'POST', htu: `${a.origin}/par` }))
      .type('form')
      .send({
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
        dpop_jkt: (await dpopKey()).jkt,
      });
    expectOAuthError(mismatch, 400, 'invalid_dpop_proof');
    // A malformed dpop_jkt at /authorize goes back to the client.
    const malformed = await browser.get(
      `/authorize?response_type=code&client_id=${encodeURIComponent(view.client_id)}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&state=s&code_challenge=${'x'.repeat(43)}&code_challenge_method=S256&dpop_jkt=short`,
    );
    expect(malformed.status).toBe(302);
    expect(new URL(malformed.headers.location).searchParams.get('error')).toBe('invalid_request');
  });

  it('requires a proof of a client registered with dpop_bound_access_tokens', async () => {
    const view = await registerClient(a, { grantTypes: ['client_credentials'], scope: 'users:read', dpopBoundAccessTokens: true });
    expect(view.dpop_bound_access_tokens).toBe(true);
    const res = await token(a, view, { grant_type: 'client_credentials' });
    expectOAuthError(res, 400, 'invalid_dpop_proof');
    expect(res.body.error_description).toBe('Tokens for this client must be bound to a key: send a DPoP proof.');
    const dpop = oauth.DPoP(clientOf(view), (await dpopKey()).pair);
    const bound = await oauth.clientCredentialsGrantRequest(as, clientOf(view), authOf(view), {}, { DPoP: dpop, ...http });
    expect(bound.status).toBe(200);
  });
});

describe('DPoP across two instances, with nonces and required server-wide (RFC 9449 8, 11.1)', () => {
  let db: TestDatabase;
  let a: TestApp & { origin: string };
  let b: TestApp;
  const secret = 'n'.repeat(40);

  /** The nonce an instance names in its answer to a token request without a proof (refused: DPOP_REQUIRED). */
  async function nonceOf(t: TestApp, view: ClientView): Promise<string> {
    const res = await t
      .http()
      .post('/token')
      .auth(view.client_id, view.client_secret!)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectOAuthError(res, 400, 'invalid_dpop_proof');
    return res.headers['dpop-nonce'];
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createListeningTestApp({ ...NO_RATE_LIMITS, DPOP_NONCE_SECRET: secret, DPOP_REQUIRED: '1' }, '127.0.0.1', db);
    // The second instance answers for the same issuer (behind one load balancer).
    b = await createTestApp({ ...NO_RATE_LIMITS, DPOP_NONCE_SECRET: secret, DPOP_REQUIRED: '1', ISSUER: a.origin }, db);
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await db.drop();
  });

  it('asks for its nonce (use_dpop_nonce), which oauth4webapi retries with, and either instance accepts', async () => {
    const issuer = new URL(a.origin);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
    const view = await registerClient(a, { grantTypes: ['client_credentials'], scope: 'users:read' });
    const client: oauth.Client = { client_id: view.client_id };
    const dpop = oauth.DPoP(client, (await dpopKey()).pair);
    const request = () =>
      oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(view.client_secret!), {}, { DPoP: dpop, ...http });
    let error: unknown;
    try {
      await oauth.processClientCredentialsResponse(as, client, await request());
    } catch (e) {
      error = e;
    }
    expect(oauth.isDPoPNonceError(error)).toBe(true);
    const tokens = await oauth.processClientCredentialsResponse(as, client, await request());
    expect(tokens.token_type).toBe('dpop');

    // The nonce a gave is good at b.
    const nonce = await nonceOf(a, view);
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const key = await dpopKey();
    const atB = await b
      .http()
      .post('/token')
      .auth(view.client_id, view.client_secret!)
      .set('DPoP', await proof(key, { htm: 'POST', htu: `${a.origin}/token`, nonce }))
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expect(atB.status, JSON.stringify(atB.body)).toBe(200);
    expect(atB.headers['dpop-nonce']).toBe(nonce);
    const wrongNonce = await b
      .http()
      .post('/token')
      .auth(view.client_id, view.client_secret!)
      .set('DPoP', await proof(key, { htm: 'POST', htu: `${a.origin}/token`, nonce: 'made-up' }))
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectOAuthError(wrongNonce, 400, 'use_dpop_nonce');
  });

  it('refuses a proof replayed at the other instance, and a token request without a proof (DPOP_REQUIRED)', async () => {
    const view = await registerClient(a, { grantTypes: ['client_credentials'], scope: 'users:read' });
    const nonce = await nonceOf(a, view);
    const once = await proof(await dpopKey(), { htm: 'POST', htu: `${a.origin}/token`, nonce });
    const send = (t: TestApp, dpop?: string) => {
      const req = t.http().post('/token').auth(view.client_id, view.client_secret!).type('form');
      if (dpop) req.set('DPoP', dpop);
      return req.send({ grant_type: 'client_credentials' });
    };
    expect((await send(a, once)).status).toBe(200);
    const replayed = await send(b, once);
    expectOAuthError(replayed, 400, 'invalid_dpop_proof');
    expect(replayed.body.error_description).toBe('The DPoP proof was already used (jti).');
    expectOAuthError(await send(b), 400, 'invalid_dpop_proof');

    const resource = await b.http().get('/.well-known/oauth-protected-resource');
    expect(resource.body.dpop_bound_access_tokens_required).toBe(true);
  });

  it('answers a request of the DPoP scheme without a valid token with DPoP challenges', async () => {
    const res = await new Browser(b).get('/api/resource');
    expect(res.status).toBe(401);
    const dpopScheme = await b.http().get('/api/resource').set('Authorization', 'DPoP not-a-token');
    expect(dpopScheme.status).toBe(401);
    expect(dpopScheme.headers['www-authenticate']).toBe(
      `DPoP error="invalid_token", algs="${ALGS}", resource_metadata="${b.config.resourceMetadataUrl}"`,
    );
  });
});
