import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView } from '../../src/oauth/clients/client-metadata';
import { RefreshToken } from '../../src/oauth/entities/refresh-token.entity';
import { hashSecret } from '../../src/crypto/secrets';
import { NO_RATE_LIMITS, expectOAuthError, issueTokens, registerClient, resourceStatus, sleep, token } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

describe('refresh rotation grace (per client, default off)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
  });
  afterAll(() => t.close());

  const refresh = (client: ClientView, refreshToken: string) =>
    token(t, client, { grant_type: 'refresh_token', refresh_token: refreshToken });

  /** A grant of a trusted client with `grace` seconds, refreshed once: the first refresh token R0 and its successor R1. */
  async function rotatedOnce(grace: number) {
    const client = await registerClient(t, { trusted: true, refreshGraceSeconds: grace });
    const tokens = await issueTokens(t, { client });
    const first = await refresh(client, tokens.refresh);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    return {
      client,
      r0: tokens.refresh,
      r1: first.body.refresh_token as string,
      access: [tokens.access, first.body.access_token as string],
    };
  }

  it('registers the grace with the client (0 when not given) and refuses more than 60 s or a client without refresh tokens', async () => {
    expect((await registerClient(t)).refresh_grace_seconds).toBe(0);
    expect((await registerClient(t, { refreshGraceSeconds: 10 })).refresh_grace_seconds).toBe(10);
    const clients = t.app.get(ClientsService);
    const base = { name: 'Flaky mobile app', redirectUris: ['https://app.example/cb'] };
    await expect(clients.create({ ...base, refreshGraceSeconds: 61 })).rejects.toThrow(/from 0 to 60/);
    await expect(clients.create({ ...base, refreshGraceSeconds: 1.5 })).rejects.toThrow(/whole number/);
    await expect(clients.create({ ...base, refreshGraceSeconds: Number.NaN })).rejects.toThrow(/whole number/);
    await expect(clients.create({ ...base, grantTypes: ['authorization_code'], refreshGraceSeconds: 5 })).rejects.toThrow(
      /needs the refresh_token grant/,
    );
  });

  it('within the grace, the rotated token presented again returns the same successor and a new working access token', async () => {
    const { client, r0, r1, access } = await rotatedOnce(30);
    const again = await refresh(client, r0);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(Object.keys(again.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(again.body.refresh_token).toBe(r1);
    expect(access).not.toContain(again.body.access_token);
    expect(await resourceStatus(t, again.body.access_token)).toBe(200);
    // The family lives on: the successor rotates normally.
    const next = await refresh(client, r1);
    expect(next.status).toBe(200);
    expect(next.body.refresh_token).not.toBe(r1);
  });

  it('stores the successor only sealed under the rotated token: neither it nor its hash is readable from the row', async () => {
    const { client, r0, r1 } = await rotatedOnce(30);
    const rows = t.app.get(DataSource).getRepository(RefreshToken);
    const rotated = await rows.findOneByOrFail({ tokenHash: hashSecret(r0) });
    expect(rotated.successorSealed).toEqual(expect.any(String));
    expect(rotated.successorSealed).not.toContain(r1);
    expect(rotated.successorSealed).not.toContain(hashSecret(r1));
    // Used once, the seal is gone.
    expect((await refresh(client, r0)).status).toBe(200);
    expect((await rows.findOneByOrFail({ tokenHash: hashSecret(r0) })).successorSealed).toBeNull();
  });

  it('used twice within the grace, the family is revoked: both refresh tokens and every access token die', async () => {
    const { client, r0, r1, access } = await rotatedOnce(30);
    const once = await refresh(client, r0);
    expect(once.status).toBe(200);
    expectOAuthError(await refresh(client, r0), 400, 'invalid_grant');
    expectOAuthError(await refresh(client, r1), 400, 'invalid_grant');
    for (const token of [...access, once.body.access_token as string]) expect(await resourceStatus(t, token)).toBe(401);
  });

  it('after the grace, presenting the rotated token revokes the family as without grace', async () => {
    const { client, r0, r1, access } = await rotatedOnce(1);
    await sleep(1_200);
    expectOAuthError(await refresh(client, r0), 400, 'invalid_grant');
    expectOAuthError(await refresh(client, r1), 400, 'invalid_grant');
    expect(await resourceStatus(t, access[1])).toBe(401);
  });

  it('once the successor itself was used, the rotated token is reuse even within the grace (a single successor)', async () => {
    const { client, r0, r1 } = await rotatedOnce(30);
    const r2 = (await refresh(client, r1)).body.refresh_token as string;
    expectOAuthError(await refresh(client, r0), 400, 'invalid_grant');
    expectOAuthError(await refresh(client, r2), 400, 'invalid_grant');
  });

  it('a client without grace revokes at the first reuse', async () => {
    const { client, r0, r1 } = await rotatedOnce(0);
    expectOAuthError(await refresh(client, r0), 400, 'invalid_grant');
    expectOAuthError(await refresh(client, r1), 400, 'invalid_grant');
  });

  it("another client presenting the rotated token gets invalid_grant and uses up nothing of the owner's grace", async () => {
    const { client, r0, r1 } = await rotatedOnce(30);
    const other = await registerClient(t, { trusted: true, refreshGraceSeconds: 30 });
    expectOAuthError(await refresh(other, r0), 400, 'invalid_grant');
    const again = await refresh(client, r0);
    expect(again.status).toBe(200);
    expect(again.body.refresh_token).toBe(r1);
  });

  it('two concurrent presentations of one refresh token (a retry racing the original) yield one successor, and the family survives', async () => {
    const client = await registerClient(t, { trusted: true, refreshGraceSeconds: 30 });
    const { refresh: r0 } = await issueTokens(t, { client });
    const answers = await Promise.all([refresh(client, r0), refresh(client, r0)]);
    const ok = answers.filter((res) => res.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((res) => res.body.refresh_token)).size).toBe(1);
    // The loser may come before the successor is stored: refused, but nothing revoked.
    for (const res of answers.filter((r) => r.status !== 200)) expectOAuthError(res, 400, 'invalid_grant');
    expect((await refresh(client, ok[0].body.refresh_token)).status).toBe(200);
  });
});
