import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { TokenIssuer } from '../../src/oauth/grants/token-issuer.service';
import { handProof, p256, rsaJwk, thumbprint } from '../support/hostile-keys';
import { NO_RATE_LIMITS, REDIRECT_URI, expectOAuthError, registerClient } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

const ALGS = 'ES256 EdDSA Ed25519 RS256 PS256';

/**
 * DPoP proofs as an attacker sends them (RFC 9449 11, "Security Considerations"), at the two places that check
 * them without any secret of the sender's: `POST /par` with a public client's id, and the resource API with a
 * bound token of one's own. Each is refused with the protocol's error (never a 500), and the expensive ones
 * before any key is built: the description says which cheap check refused it.
 */
describe('DPoP proofs an attacker sends', () => {
  let t: TestApp;
  let client: ClientView;
  let parUrl: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    client = await registerClient(t, { isPublic: true });
    parUrl = `${t.config.issuer}/par`;
  });
  afterAll(async () => {
    await t.close();
  });

  const push = (dpop: string, extra: Record<string, string> = {}) =>
    t
      .http()
      .post('/par')
      .type('form')
      .set('DPoP', dpop)
      .send({
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        scope: 'orders:read',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
        ...extra,
      });

  async function refusedAtPar(dpop: string, description: string): Promise<void> {
    const res = await push(dpop);
    expectOAuthError(res, 400, 'invalid_dpop_proof');
    expect(res.body.error_description).toBe(description);
  }

  /** A proof whose `jwk` is `jwk` and whose signature is junk of `bytes` bytes (RS256). */
  const rsaProof = (jwk: object, bytes: number) =>
    handProof(p256(), { htm: 'POST', htu: parUrl }, { alg: 'RS256', jwk }, randomBytes(bytes).toString('base64url'));

  it('refuses an RSA key with a huge public exponent before building it', async () => {
    await refusedAtPar(
      rsaProof(rsaJwk(3072, randomBytes(384)), 384),
      "The DPoP proof's jwk does not fit RS256: an RSA key must have the public exponent 65537 (e AQAB).",
    );
  });

  it('refuses RSA moduli outside 2048 to 4096 bits, and a proof too long to be an honest one', async () => {
    await refusedAtPar(rsaProof(rsaJwk(8192), 1024), "The DPoP proof's jwk does not fit RS256: an RSA key must have 2048 to 4096 bits.");
    await refusedAtPar(rsaProof(rsaJwk(1024), 128), "The DPoP proof's jwk does not fit RS256: an RSA key must have 2048 to 4096 bits.");
    await refusedAtPar(rsaProof(rsaJwk(16384), 2048), 'The DPoP proof must be at most 4096 characters.');
  });

  it('answers an exp in the past and an nbf in the future with invalid_dpop_proof, not a 500', async () => {
    const now = Math.floor(Date.now() / 1000);
    await refusedAtPar(handProof(p256(), { htm: 'POST', htu: parUrl, exp: now - 600 }), 'The DPoP proof has expired (exp).');
    await refusedAtPar(handProof(p256(), { htm: 'POST', htu: parUrl, nbf: now + 600 }), 'The DPoP proof is not valid yet (nbf).');
    await refusedAtPar(handProof(p256(), { htm: 'POST', htu: parUrl, exp: 'soon' }), 'The DPoP proof has expired (exp).');
  });

  it('takes a fractional iat (a NumericDate may have one) and keeps its jti', async () => {
    const proof = handProof(p256(), { htm: 'POST', htu: parUrl, iat: Date.now() / 1000 - 0.25 });
    expect((await push(proof)).status).toBe(201);
    await refusedAtPar(proof, 'The DPoP proof was already used (jti).');
  });

  it('refuses an ES256 signature that is not 64 bytes, and a crit header', async () => {
    const key = p256();
    const good = handProof(key, { htm: 'POST', htu: parUrl });
    await refusedAtPar(`${good}AAAA`, "The DPoP proof's signature is not one of ES256.");
    await refusedAtPar(`${good.slice(0, -8)}`, "The DPoP proof's signature is not one of ES256.");
    await refusedAtPar(handProof(key, { htm: 'POST', htu: parUrl }, { crit: ['exp'] }), 'The DPoP proof must not have a crit header.');
    // A forged signature of the right length is checked, and refused.
    await refusedAtPar(
      good.replace(/\.[^.]+$/, `.${randomBytes(64).toString('base64url')}`),
      "The DPoP proof's signature does not verify with its jwk.",
    );
  });

  it('refuses claims of the wrong type in every place', async () => {
    const key = p256();
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{ htm: 'POST', htu: parUrl, iat: 'now' }, {}, "The DPoP proof's iat must be within the last 60 seconds."],
      [{ htm: 'POST', htu: parUrl, iat: null }, {}, "The DPoP proof's iat must be within the last 60 seconds."],
      [{ htm: 'POST', htu: parUrl, jti: 7 }, {}, 'The DPoP proof needs a jti of 1 to 256 characters.'],
      [{ htm: 'POST', htu: parUrl, jti: 'j'.repeat(257) }, {}, 'The DPoP proof needs a jti of 1 to 256 characters.'],
      [{ htm: ['POST'], htu: parUrl }, {}, 'The DPoP proof is for another method (htm must be POST).'],
      [{ htm: 'POST', htu: { href: parUrl } }, {}, `The DPoP proof is for another URL (htu must be ${parUrl}).`],
      [{ htm: 'POST', htu: parUrl }, { jwk: 'key' }, 'The DPoP proof must carry its public key (jwk).'],
      [{ htm: 'POST', htu: parUrl }, { jwk: [] }, 'The DPoP proof must carry its public key (jwk).'],
      [{ htm: 'POST', htu: parUrl }, { alg: 7 }, "The DPoP proof's alg must be one of ES256, EdDSA, Ed25519, RS256, PS256."],
      [{ htm: 'POST', htu: parUrl }, { typ: ['dpop+jwt'] }, 'The DPoP proof must have typ dpop+jwt.'],
      [{ htm: 'POST', htu: parUrl }, { jwk: { kty: 'EC', crv: 'P-256', x: 7, y: 'y' } }, "The DPoP proof's jwk is not a valid key."],
    ];
    for (const [claims, header, description] of cases) await refusedAtPar(handProof(key, claims, header), description);
  });

  it('bounds every pushed parameter as a URL would (a 50 kB scope is not stored)', async () => {
    const res = await t
      .http()
      .post('/par')
      .type('form')
      .send({
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        scope: `orders:read ${'x'.repeat(50_000)}`,
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
      });
    expectOAuthError(res, 400, 'invalid_request');
    expect(res.body.error_description).toBe('scope must be at most 1000 characters.');
  });

  it('answers the same proofs at the resource API with 401 and the DPoP challenge', async () => {
    const key = p256();
    const jkt = thumbprint(key.jwk);
    const user = await t.createUser();
    const issued = t.app
      .get(TokenIssuer)
      .mintAccessToken({ sub: user.id, clientId: client.client_id, scope: 'orders:read', grantId: randomUUID(), jkt });
    const htu = `${t.config.resourceOrigin}/api/resource`;
    const ath = createHash('sha256').update(issued.token).digest('base64url');
    const call = (dpop: string) => t.http().get('/api/resource').set('Authorization', `DPoP ${issued.token}`).set('DPoP', dpop);
    expect((await call(handProof(key, { htm: 'GET', htu, ath }))).status).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    for (const [dpop, detail] of [
      [handProof(key, { htm: 'GET', htu, ath, exp: now - 600 }), 'The DPoP proof has expired (exp).'],
      [handProof(key, { htm: 'GET', htu, ath, nbf: now + 600 }), 'The DPoP proof is not valid yet (nbf).'],
      [`${handProof(key, { htm: 'GET', htu, ath })}AAAA`, "The DPoP proof's signature is not one of ES256."],
      [
        handProof(
          key,
          { htm: 'GET', htu, ath },
          { alg: 'RS256', jwk: rsaJwk(4096, randomBytes(512)) },
          randomBytes(512).toString('base64url'),
        ),
        "The DPoP proof's jwk does not fit RS256: an RSA key must have the public exponent 65537 (e AQAB).",
      ],
    ]) {
      const res = await call(dpop);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(
        `DPoP error="invalid_dpop_proof", error_description="${detail}", algs="${ALGS}", resource_metadata="${t.config.resourceMetadataUrl}"`,
      );
    }
  });

  it("checks a proof at /userinfo against the issuer's URL, not the API's (AUDIENCE elsewhere)", async () => {
    const split = await createTestApp({ ...NO_RATE_LIMITS, AUDIENCE: 'https://api.example.com' });
    try {
      const key = p256();
      const user = await split.createUser();
      const issued = split.app
        .get(TokenIssuer)
        .mintAccessToken({ sub: user.id, clientId: 'c', scope: 'openid', grantId: randomUUID(), jkt: thumbprint(key.jwk) });
      const ath = createHash('sha256').update(issued.token).digest('base64url');
      const call = (htu: string) =>
        split
          .http()
          .get('/userinfo')
          .set('Authorization', `DPoP ${issued.token}`)
          .set('DPoP', handProof(key, { htm: 'GET', htu, ath }));
      const wrong = await call('https://api.example.com/userinfo');
      expect(wrong.status).toBe(401);
      expect(wrong.body.detail).toBe(`The DPoP proof is for another URL (htu must be ${split.config.issuer}/userinfo).`);
      const right = await call(`${split.config.issuer}/userinfo`);
      expect(right.status).toBe(200);
      expect(right.body.sub).toBe(user.id);
    } finally {
      await split.close();
    }
  });

  it('puts POST /par under the token endpoint rate limit', async () => {
    const limited = await createTestApp({ RATE_LIMIT_TOKEN: '2' });
    try {
      const pub = await registerClient(limited, { isPublic: true });
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await limited
          .http()
          .post('/par')
          .type('form')
          .send({
            client_id: pub.client_id,
            response_type: 'code',
            redirect_uri: REDIRECT_URI,
            scope: 'orders:read',
            code_challenge: 'x'.repeat(43),
            code_challenge_method: 'S256',
          });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([201, 201, 429]);
    } finally {
      await limited.close();
    }
  });
});
