import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/crypto/secrets';
import { CuttingProxy } from '../support/cutting-proxy';
import {
  NO_RATE_LIMITS,
  authorizeCode,
  decodeJwt,
  expectOAuthError,
  pkcePair,
  registerClient,
  resourceStatus,
  signedIn,
  token,
} from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/** How long the database stays away between the rotation's commit and the answer. */
const OUTAGE_MS = 15_000;

/**
 * A refresh rotation that commits while the database goes away before its answer, for longer than the service waits
 * to read the outcome back: the client is answered 503, and its retry with the same token, once the database is
 * back, must get its tokens (on another instance too), never a revoked grant; a later replay still revokes.
 */
describe('a rotation answered 503 after its commit, the database away for 15 s', () => {
  let database: ThrowawayPostgres;
  let proxy: CuttingProxy;
  let t: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    database = await ThrowawayPostgres.launch();
    proxy = new CuttingProxy(database.port);
    await proxy.listen();
    const url = `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
    t = await createTestApp({ ...NO_RATE_LIMITS }, { url, drop: async () => undefined });
    // A second instance on the same database, reached directly.
    other = await createTestApp({ ...NO_RATE_LIMITS }, { url: database.url, drop: async () => undefined });
  }, 120_000);
  afterAll(async () => {
    await other?.close();
    await t?.close();
    await proxy?.close();
    database?.destroy();
  });

  async function retryMark(refreshToken: string): Promise<unknown> {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT retry_until FROM refresh_tokens WHERE token_hash = $1', [hashSecret(refreshToken)]);
      return rows[0]?.retry_until ?? null;
    } finally {
      await client.end();
    }
  }

  it('the retry gets the successor, the grant lives on, and a replay after it still revokes', async () => {
    const client = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
    const issued = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
    expect(issued.status).toBe(200);
    const presented = issued.body.refresh_token as string;

    // The token is read by the first statement carrying its hash; the rotation is the second.
    const cut = proxy.cutOnce(hashSecret(presented), 'after-commit', 1, true);
    const lost = await token(t, client, { grant_type: 'refresh_token', refresh_token: presented });
    await cut;
    expect(lost.status).toBe(503);
    expect(lost.body).toEqual({
      type: 'urn:problem-type:database-unavailable',
      title: 'Service Unavailable',
      status: 503,
      detail: 'The service is temporarily unavailable.',
      instance: '/token',
    });
    await sleep(OUTAGE_MS);
    proxy.up();
    // The instance that answered 503 marks the rotation once the database answers again (it tries every second).
    let mark = await retryMark(presented);
    for (let tries = 0; mark === null && tries < 50; tries++) mark = (await sleep(200), await retryMark(presented));
    expect(mark).not.toBeNull();

    const retried = await token(other, client, { grant_type: 'refresh_token', refresh_token: presented });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.refresh_token).not.toBe(presented);
    expect(decodeJwt(retried.body.access_token).payload.gid).toBe(decodeJwt(issued.body.access_token).payload.gid);
    expect(await resourceStatus(t, retried.body.access_token)).toBe(200);
    const next = await token(t, client, { grant_type: 'refresh_token', refresh_token: retried.body.refresh_token });
    expect(next.status, JSON.stringify(next.body)).toBe(200);

    // The same old token once more is a replay: refused, and the grant revoked.
    expectOAuthError(await token(other, client, { grant_type: 'refresh_token', refresh_token: presented }), 400, 'invalid_grant');
    expect(await resourceStatus(other, next.body.access_token)).toBe(401);
  }, 90_000);
});
