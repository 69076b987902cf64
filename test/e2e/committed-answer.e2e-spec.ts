import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/crypto/secrets';
import { CuttingProxy } from '../support/cutting-proxy';
import {
  NO_RATE_LIMITS,
  authorizeCode,
  backChannel,
  decodeJwt,
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
describe('an answer lost after the commit', () => {
  let pg: ThrowawayPostgres;
  let proxy: CuttingProxy;
  let t: TestApp;

  beforeAll(async () => {
    pg = await ThrowawayPostgres.launch();
    proxy = new CuttingProxy(pg.port);
    await proxy.listen();
    const url = `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
    t = await createTestApp({ ...NO_RATE_LIMITS }, { url, drop: async () => undefined });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    pg?.destroy();
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
    const cut = proxy.cutOnce(hashSecret(code), 'after-commit');
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
});
