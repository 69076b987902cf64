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
 * A refresh rotation or a code redemption that commits while the database goes away before its answer, for longer
 * than the service waits to read the outcome back: the client is answered 503, and its retry with the same token or
 * code, once the database is back, gets its tokens (here on another instance), never a revoked grant; a later
 * replay still revokes.
 */
describe('an answer lost after the commit, the database away for 15 s', () => {
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

  /** The retry mark of a refresh token's or a code's row, once the instance that answered 503 has written it. */
  async function retryMark(table: 'refresh_tokens' | 'authorization_codes', secret: string): Promise<unknown> {
    const key = table === 'refresh_tokens' ? 'token_hash' : 'code_hash';
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      for (let tries = 0; tries < 50; tries++) {
        const { rows } = await client.query(`SELECT retry_until FROM ${table} WHERE ${key} = $1`, [hashSecret(secret)]);
        const mark: unknown = rows[0]?.retry_until ?? null;
        if (mark !== null) return mark;
        await sleep(200);
      }
      return null;
    } finally {
      await client.end();
    }
  }

  /** A 503 of the token endpoint for an unavailable database. */
  function expectUnavailable(answer: Awaited<ReturnType<typeof token>>): void {
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({
      type: 'urn:problem-type:database-unavailable',
      title: 'Service Unavailable',
      status: 503,
      detail: 'The service is temporarily unavailable.',
      instance: '/token',
    });
  }

  it('a code redemption: the retry with the same code gets tokens of the same grant, a replay after it revokes', async () => {
    const client = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });

    const cut = proxy.cutOnce(hashSecret(code), 'after-commit', 0, true);
    expectUnavailable(await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier }));
    await cut;
    await sleep(OUTAGE_MS);
    proxy.up();
    expect(await retryMark('authorization_codes', code)).not.toBeNull();

    const retried = await token(other, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(await resourceStatus(t, retried.body.access_token)).toBe(200);
    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: retried.body.refresh_token });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);

    expectOAuthError(
      await token(other, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier }),
      400,
      'invalid_grant',
    );
    expect(await resourceStatus(other, refreshed.body.access_token)).toBe(401);
  }, 90_000);

  it('a refresh rotation: the retry gets the successor, the grant lives on, and a replay after it still revokes', async () => {
    const client = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
    const issued = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
    expect(issued.status).toBe(200);
    const presented = issued.body.refresh_token as string;

    // The token is read by the first statement carrying its hash; the rotation is the second.
    const cut = proxy.cutOnce(hashSecret(presented), 'after-commit', 1, true);
    expectUnavailable(await token(t, client, { grant_type: 'refresh_token', refresh_token: presented }));
    await cut;
    await sleep(OUTAGE_MS);
    proxy.up();
    // The instance that answered 503 marks the rotation once the database answers again (it tries every second).
    expect(await retryMark('refresh_tokens', presented)).not.toBeNull();

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
