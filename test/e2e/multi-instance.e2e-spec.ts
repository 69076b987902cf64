import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningKeysService } from '../../src/keys/signing-keys.service';
import { ClientsService } from '../../src/oauth';
import {
  NO_RATE_LIMITS,
  authorizeCode,
  issueTokens,
  pkcePair,
  registerClient,
  resourceStatus,
  signedIn,
  sleep,
  token,
} from '../support/oauth';
import { type TestApp, createTwoInstances } from '../support/test-app';

/** Instances share only the database; codes, single use, revocation and keys hold across them. */
describe('several instances on one database', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a, b, close } = await createTwoInstances({ ...NO_RATE_LIMITS, REVOCATION_SYNC_SECONDS: '1' }));
  });
  afterAll(() => close?.());

  it('redeems at one instance a code issued by another', async () => {
    const client = await registerClient(a, { trusted: true });
    const { browser } = await signedIn(a);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
    const res = await token(b, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
    expect(res.status).toBe(200);
    expect(await resourceStatus(a, res.body.access_token)).toBe(200);
    expect(await resourceStatus(b, res.body.access_token)).toBe(200);
  });

  it('applies a scope added at one instance there at once, and at the other within REVOCATION_SYNC_SECONDS', async () => {
    const client = await registerClient(a, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'users:read' });
    const asked = { grant_type: 'client_credentials', scope: 'users:read orders:read' };
    // Both instances have read the client (and keep it) before the change.
    expect((await token(a, client, asked)).body.error).toBe('invalid_scope');
    expect((await token(b, client, asked)).body.error).toBe('invalid_scope');
    await a.app.get(ClientsService).update(client.client_id, { addScope: 'orders:read' });
    expect((await token(a, client, asked)).status).toBe(200);
    await sleep(1_200);
    const atB = await token(b, client, asked);
    expect(atB.status, JSON.stringify(atB.body)).toBe(200);
    expect(atB.body.scope).toBe('users:read orders:read');
  });

  it('lets exactly one of 20 concurrent redemptions of one code succeed, spread over two instances', async () => {
    const client = await registerClient(a, { trusted: true });
    const { browser } = await signedIn(a);
    const pkce = pkcePair();
    const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });
    const form = { grant_type: 'authorization_code', code, code_verifier: pkce.verifier };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => token(i % 2 ? a : b, client, form)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
    for (const r of answers.filter((x) => x.status === 400)) expect(r.body.error).toBe('invalid_grant');
  });

  it('lets exactly one of 20 concurrent refreshes of one refresh token succeed, spread over two instances', async () => {
    const issued = await issueTokens(a);
    const form = { grant_type: 'refresh_token', refresh_token: issued.refresh };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => token(i % 2 ? a : b, issued.client, form)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19);
  });

  it('stops a revoked grant at the other instance within REVOCATION_SYNC_SECONDS', async () => {
    const issued = await issueTokens(a);
    expect(await resourceStatus(b, issued.access)).toBe(200);
    const revoke = await a
      .http()
      .post('/revoke')
      .type('form')
      .set('Authorization', `Basic ${Buffer.from(`${issued.client.client_id}:${issued.client.client_secret}`).toString('base64')}`)
      .send({ token: issued.refresh });
    expect(revoke.status).toBe(200);
    expect(await resourceStatus(a, issued.access)).toBe(401);
    await sleep(1_600);
    expect(await resourceStatus(b, issued.access)).toBe(401);
  });

  it('accepts at once at the other instance a token signed with a newly rotated key', async () => {
    const kid = await a.app.get(SigningKeysService).rotate();
    const issued = await issueTokens(a);
    const header = JSON.parse(Buffer.from(issued.access.split('.')[0], 'base64url').toString());
    expect(header.kid).toBe(kid);
    // b has not reloaded its keys yet: the unknown kid makes it reload before deciding.
    expect(await resourceStatus(b, issued.access)).toBe(200);
    const jwks = await b.http().get('/.well-known/jwks.json');
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(kid);
  });
});
