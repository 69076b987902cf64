import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/crypto/secrets';
import { CuttingProxy } from '../support/cutting-proxy';
import {
  NO_RATE_LIMITS,
  authorizeCode,
  backChannel,
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

/**
 * A write whose connection dies between its commit and its answer (PostgreSQL): the client is told what committed,
 * so its retry is never taken for a replay. A proxy between the service and the database cuts the connection that
 * carries the statement, once the server has answered it (committed) or before the server has seen it.
 */
/** How long the database stays away between the commit and the answer, in the lost-answer tests. */
const OUTAGE_MS = 15_000;

describe('an answer lost after the commit', () => {
  let database: ThrowawayPostgres;
  let proxy: CuttingProxy;
  let t: TestApp;
  /** A second instance on the same database, reached directly. */
  let other: TestApp;

  beforeAll(async () => {
    database = await ThrowawayPostgres.launch();
    proxy = new CuttingProxy(database.port);
    await proxy.listen();
    const url = `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
    t = await createTestApp({ ...NO_RATE_LIMITS }, { url, drop: async () => undefined });
    other = await createTestApp({ ...NO_RATE_LIMITS }, { url: database.url, drop: async () => undefined });
  }, 120_000);
  afterAll(async () => {
    await other?.close();
    await t?.close();
    await proxy?.close();
    database?.destroy();
  });

  async function freshTokens() {
    const client = await registerClient(t, { trusted: true });
    const { browser } = await signedIn(t);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
    return { client, code, verifier: pkce.verifier };
  }

  it('answers a refresh rotation that committed with its tokens, which then work (no replay, nothing revoked)', async () => {
    const { client, code, verifier } = await freshTokens();
    const issued = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: verifier });
    expect(issued.status).toBe(200);

    // The rotation (the token is read first, by the statement that carries its hash before it).
    const cut = proxy.cutOnce(hashSecret(issued.body.refresh_token), 'after-commit', 1);
    const rotated = await token(t, client, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token });
    await cut;
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body.refresh_token).not.toBe(issued.body.refresh_token);
    expect(await resourceStatus(t, rotated.body.access_token)).toBe(200);
    // The rotated-to token is the live one: it rotates again, and the grant was never revoked.
    const next = await token(t, client, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(await resourceStatus(t, issued.body.access_token)).toBe(200);
    expect(decodeJwt(next.body.access_token).payload.gid).toBe(decodeJwt(issued.body.access_token).payload.gid);
  });

  it('answers a code redemption that committed with its tokens', async () => {
    const { client, code, verifier } = await freshTokens();
    // The redemption (the code is read first, by the statement that carries its hash before it).
    const cut = proxy.cutOnce(hashSecret(code), 'after-commit', 1);
    const redeemed = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: verifier });
    await cut;
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(200);
    expect(await resourceStatus(t, redeemed.body.access_token)).toBe(200);
    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: redeemed.body.refresh_token });
    expect(refreshed.status).toBe(200);
  });

  it('answers 503 for a rotation the database never saw, and the retry of the same token succeeds', async () => {
    const { client, code, verifier } = await freshTokens();
    const issued = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: verifier });
    expect(issued.status).toBe(200);

    const cut = proxy.cutOnce(hashSecret(issued.body.refresh_token), 'before-server', 1);
    const lost = await backChannel(t, '/token', client, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token });
    await cut;
    expect(lost.status).toBe(503);
    const retried = await token(t, client, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(await resourceStatus(t, retried.body.access_token)).toBe(200);
  });

  /*
   * The database away longer than the service waits to read the outcome back: the client is answered 503, and its
   * retry with the same token or code, once the database is back, gets its tokens (here on the other instance),
   * never a revoked grant; a later replay still revokes.
   */
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

    const cut = proxy.cutOnce(hashSecret(code), 'after-commit', 1, true);
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
