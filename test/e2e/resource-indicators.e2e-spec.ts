import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { RefreshToken } from '../../src/oauth/entities/refresh-token.entity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  authorizePath,
  backChannel,
  basicAuth,
  decodeJwt,
  expectOAuthError,
  login,
  parseForm,
  pkcePair,
  redirectParams,
  registerClient,
  resourceStatus,
} from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

const BILLING = 'https://billing.example.com/api';
const REPORTS = 'https://reports.example.com';

describe('resource indicators (RFC 8707)', () => {
  let t: TestApp;
  let api: string;
  /** A trusted client that may also ask for BILLING and REPORTS. */
  let client: ClientView;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    api = t.config.audience;
    client = await registerClient(t, { trusted: true, resources: [BILLING, REPORTS] });
    const user = await t.createUser();
    browser = new Browser(t);
    expect((await login(browser, user.email)).status).toBe(303);
  });
  afterAll(() => t.close());

  /** POST /token as `c` with a form in which parameters may repeat. */
  function tokenRequest(c: ClientView, form: [string, string][]) {
    const body = new URLSearchParams(form);
    return t.http().post('/token').type('form').set('Authorization', basicAuth(c.client_id, c.client_secret!)).send(body.toString());
  }

  /** Redeems a code (with its PKCE verifier, if any) as `c`, naming `resources` at the token endpoint. */
  function redeem(grant: { code: string; verifier?: string }, resources: string[] = [], c: ClientView = client) {
    return tokenRequest(c, [
      ['grant_type', 'authorization_code'],
      ['code', grant.code],
      ...(grant.verifier ? [['code_verifier', grant.verifier] as [string, string]] : []),
      ...resources.map((r): [string, string] => ['resource', r]),
    ]);
  }

  /** GET /authorize with `resources` (repeated) and PKCE; the redirect's parameters and the verifier. */
  async function authorize(resources: string[], c: ClientView = client, b: Browser = browser) {
    const pkce = pkcePair();
    const path = authorizePath([
      ['response_type', 'code'],
      ['client_id', c.client_id],
      ['state', 'xyz'],
      ['code_challenge', pkce.challenge],
      ['code_challenge_method', 'S256'],
      ...resources.map((r): [string, string] => ['resource', r]),
    ]);
    let res = await b.get(path);
    if (res.status === 200) res = await b.submit(res, { decision: 'allow' });
    return { params: redirectParams(res), verifier: pkce.verifier };
  }

  async function codeFor(resources: string[]) {
    const { params, verifier } = await authorize(resources);
    expect(params.get('error'), params.toString()).toBeNull();
    return { code: params.get('code')!, verifier };
  }

  const audOf = (accessToken: string) => decodeJwt(accessToken).payload.aud;

  it('registers the resources a client may name besides the API, and refuses one that is not an absolute URI', async () => {
    expect(client.resources).toEqual([BILLING, REPORTS]);
    expect((await registerClient(t)).resources).toEqual([]);
    const clients = t.app.get(ClientsService);
    const base = { name: 'Other', redirectUris: ['https://o.example/cb'] };
    for (const bad of ['/relative', 'https://x.example/#frag', 'not a uri']) {
      await expect(clients.create({ ...base, resources: [bad] })).rejects.toThrow(
        /--resource .* must be an absolute URI without a fragment/,
      );
    }
  });

  it('a resource named at /authorize becomes the aud of the token, which this API then refuses (it checks its own audience)', async () => {
    const { code, verifier } = await codeFor([BILLING]);
    const res = await redeem({ code, verifier });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(audOf(res.body.access_token)).toBe(BILLING);
    expect(await resourceStatus(t, res.body.access_token)).toBe(401);
  });

  it('several resources at /authorize: all of them by default, or the one the token request names; one outside them is invalid_target', async () => {
    const all = await codeFor([BILLING, REPORTS]);
    const both = await redeem(all);
    expect(both.status).toBe(200);
    expect(audOf(both.body.access_token)).toEqual([BILLING, REPORTS]);

    const one = await codeFor([BILLING, REPORTS]);
    const narrowed = await redeem(one, [REPORTS]);
    expect(narrowed.status).toBe(200);
    expect(audOf(narrowed.body.access_token)).toBe(REPORTS);

    const outside = await codeFor([BILLING]);
    const refused = await redeem(outside, [api]);
    expectOAuthError(refused, 400, 'invalid_target');
  });

  it('a code spent on a resource outside its authorization leaves no refresh token and no code.redeemed event', async () => {
    const refreshTokens = t.app.get(DataSource).getRepository(RefreshToken);
    const redeemedEvents = async () =>
      (await t.app.get(AuditService).list(Object.assign(new AuditEventsQueryDto(), { type: 'code.redeemed', client_id: client.client_id })))
        .page.total;
    const before = { tokens: await refreshTokens.count({ where: { clientId: client.client_id } }), events: await redeemedEvents() };
    expectOAuthError(await redeem(await codeFor([BILLING]), [api]), 400, 'invalid_target');
    expectOAuthError(await redeem(await codeFor([]), [BILLING]), 400, 'invalid_target');
    expect(await refreshTokens.count({ where: { clientId: client.client_id } })).toBe(before.tokens);
    expect(await redeemedEvents()).toBe(before.events);
  });

  it('without any resource the token is for the API, as before; naming the API works too', async () => {
    const plain = await codeFor([]);
    const res = await redeem(plain);
    expect(audOf(res.body.access_token)).toBe(api);
    expect(await resourceStatus(t, res.body.access_token)).toBe(200);

    const named = await codeFor([api]);
    const res2 = await redeem(named, [api]);
    expect(audOf(res2.body.access_token)).toBe(api);
    expect(await resourceStatus(t, res2.body.access_token)).toBe(200);
  });

  it('a resource this client may never name is refused before the code is spent: the same code then works', async () => {
    const { code, verifier } = await codeFor([BILLING]);
    const typo = await redeem({ code, verifier }, ['https://biling.example.com/api']);
    expectOAuthError(typo, 400, 'invalid_target');
    const res = await redeem({ code, verifier });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(audOf(res.body.access_token)).toBe(BILLING);
  });

  it('a token request cannot widen an authorization that named no resource', async () => {
    const plain = await codeFor([]);
    const res = await redeem(plain, [BILLING]);
    expectOAuthError(res, 400, 'invalid_target');
  });

  it('/authorize answers invalid_target (redirected, with state) for a resource the client may not name, a relative URI or a fragment', async () => {
    for (const resources of [['https://evil.example.com'], [BILLING, 'https://evil.example.com'], ['/api'], [`${BILLING}#x`]]) {
      const { params } = await authorize(resources);
      expect(params.get('error'), resources.join(' ')).toBe('invalid_target');
      expect(params.get('state')).toBe('xyz');
      expect(params.get('code')).toBeNull();
    }
  });

  it('the consent page carries the resources through to the grant', async () => {
    const untrusted = await registerClient(t, { resources: [BILLING, REPORTS] });
    const path = authorizePath([
      ['response_type', 'code'],
      ['client_id', untrusted.client_id],
      ['resource', BILLING],
      ['resource', REPORTS],
    ]);
    const page = await browser.get(path);
    expect(page.status).toBe(200);
    expect(parseForm(page.text).hidden.resource).toBe(`${BILLING} ${REPORTS}`);
    const allowed = await browser.submit(page, { decision: 'allow' });
    const code = redirectParams(allowed).get('code')!;
    const res = await redeem({ code }, [], untrusted);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(audOf(res.body.access_token)).toEqual([BILLING, REPORTS]);
  });

  it("a refresh keeps the authorization's resources, may narrow them, and refuses another without rotating the token", async () => {
    const { code, verifier } = await codeFor([BILLING, REPORTS]);
    const first = await redeem({ code, verifier });
    const kept = await tokenRequest(client, [
      ['grant_type', 'refresh_token'],
      ['refresh_token', first.body.refresh_token],
    ]);
    expect(kept.status).toBe(200);
    expect(audOf(kept.body.access_token)).toEqual([BILLING, REPORTS]);

    const refused = await tokenRequest(client, [
      ['grant_type', 'refresh_token'],
      ['refresh_token', kept.body.refresh_token],
      ['resource', 'https://evil.example.com'],
    ]);
    expectOAuthError(refused, 400, 'invalid_target');
    const outside = await tokenRequest(client, [
      ['grant_type', 'refresh_token'],
      ['refresh_token', kept.body.refresh_token],
      ['resource', api],
    ]);
    expectOAuthError(outside, 400, 'invalid_target');

    // Still the current refresh token: refused requests did not rotate it.
    const narrowed = await tokenRequest(client, [
      ['grant_type', 'refresh_token'],
      ['refresh_token', kept.body.refresh_token],
      ['resource', BILLING],
    ]);
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(audOf(narrowed.body.access_token)).toBe(BILLING);
  });

  it('client credentials take resource too: aud is the named resource, and one the client may not name is invalid_target', async () => {
    const service = await registerClient(t, {
      redirectUris: [],
      grantTypes: ['client_credentials'],
      scope: 'orders:read',
      resources: [REPORTS],
    });
    const res = await tokenRequest(service, [
      ['grant_type', 'client_credentials'],
      ['resource', REPORTS],
    ]);
    expect(res.status).toBe(200);
    expect(audOf(res.body.access_token)).toBe(REPORTS);
    expectOAuthError(
      await tokenRequest(service, [
        ['grant_type', 'client_credentials'],
        ['resource', BILLING],
      ]),
      400,
      'invalid_target',
    );
  });

  it('introspection and revocation serve a token issued for another resource to its client', async () => {
    const { code, verifier } = await codeFor([BILLING]);
    const res = await redeem({ code, verifier });
    const introspected = await backChannel(t, '/introspect', client, { token: res.body.access_token });
    expect(introspected.body).toMatchObject({ active: true, aud: BILLING, client_id: client.client_id });
    expect((await backChannel(t, '/revoke', client, { token: res.body.access_token })).status).toBe(200);
    expect((await backChannel(t, '/introspect', client, { token: res.body.access_token })).body).toEqual({ active: false });
  });
});
