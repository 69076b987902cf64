import { randomUUID } from 'node:crypto';
import { type JWTPayload, createLocalJWKSet, jwtVerify } from 'jose';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../../src/audit/audit.service';
import { AuditEventsQueryDto } from '../../src/audit/dto/audit-events-query.dto';
import { SqlRunner, sql } from '../../src/database/sql';
import { ClientsService } from '../../src/oauth/clients/clients.service';
import { type ClientView, InvalidClientInputError } from '../../src/oauth/clients/client-metadata';
import { TOKEN_EXCHANGE_GRANT } from '../../src/oauth/entities/client.entity';
import { MAX_ACTORS } from '../../src/oauth/grants/token-exchange-grant.service';
import {
  NO_RATE_LIMITS,
  backChannel,
  bearerChallenge,
  decodeJwt,
  expectOAuthError,
  genuineClaims,
  issueTokens,
  parseForms,
  registerClient,
  resourceStatus,
  signWithForeignKey,
  signWithServiceKey,
  token,
} from '../support/oauth';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

const ACCESS_TOKEN_TTL = 600;
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
const BILLING = 'https://billing.example.com/api';
const REPORTS = 'https://reports.example.com/api';
const REDIRECT = 'https://agent.example/cb';
const INITIAL_TOKEN = 'initial-access-token-for-the-token-exchange-suite';

describe('token exchange (RFC 8693) for delegation', () => {
  let t: TestApp;
  /** An agent people sign in to: the code flow, and the exchange of its own tokens; it may ask tokens for billing. */
  let agent: ClientView;
  /** A tool with a token of its own (client credentials), which it hands the agent as an actor token. */
  let tool: ClientView;
  let jwks: ReturnType<typeof createLocalJWKSet>;

  beforeAll(async () => {
    t = await createTestApp({
      ...NO_RATE_LIMITS,
      ACCESS_TOKEN_TTL: String(ACCESS_TOKEN_TTL),
      REGISTRATION: 'open',
      REGISTRATION_INITIAL_TOKEN: INITIAL_TOKEN,
    });
    agent = await registerClient(t, {
      name: 'Agent',
      trusted: true,
      grantTypes: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE_GRANT],
      resources: [BILLING],
    });
    tool = await registerClient(t, { name: 'Tool', redirectUris: [], grantTypes: ['client_credentials'], scope: 'orders:read' });
    jwks = createLocalJWKSet((await t.http().get('/.well-known/jwks.json')).body);
  });
  afterAll(() => t.close());

  const exchange = (client: ClientView, form: Record<string, string | undefined>) =>
    token(t, client, { grant_type: TOKEN_EXCHANGE_GRANT, ...form });

  /** A person's tokens from the code flow with the agent. */
  const personsTokens = (scope = 'users:read orders:read') => issueTokens(t, { client: agent, scope });

  /** Exchanges `subject` and checks the success answer (RFC 8693 2.2.1); returns the new access token. */
  async function exchanged(client: ClientView, subject: string, form: Record<string, string | undefined> = {}): Promise<string> {
    const res = await exchange(client, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE, ...form });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.access_token as string;
  }

  /** The verified claims of an access token (our JWKS, `typ: at+jwt`, our issuer). */
  async function claimsOf(accessToken: string, audience: string): Promise<JWTPayload & Record<string, unknown>> {
    const { payload } = await jwtVerify(accessToken, jwks, { issuer: t.config.issuer, audience, typ: 'at+jwt', algorithms: ['RS256'] });
    return payload as JWTPayload & Record<string, unknown>;
  }

  const introspect = (client: ClientView, accessToken: string) => backChannel(t, '/introspect', client, { token: accessToken });

  const machineToken = async (): Promise<string> => {
    const res = await token(t, tool, { grant_type: 'client_credentials' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.access_token as string;
  };

  /** A resource server registered as a client: it may exchange the tokens aimed at its own resource, for `resources`. */
  const resourceServer = (name: string, resources: string[]) =>
    registerClient(t, { name, redirectUris: [], grantTypes: [TOKEN_EXCHANGE_GRANT], resources, scope: 'users:read orders:read' });

  describe("a person's token exchanged by the client it was issued to", () => {
    it('answers 200 with access_token, issued_token_type, token_type Bearer, expires_in and scope, never a refresh token, not cacheable', async () => {
      const issued = await personsTokens();
      const res = await exchange(agent, {
        subject_token: issued.access,
        subject_token_type: ACCESS_TOKEN_TYPE,
        resource: BILLING,
        scope: 'orders:read',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'issued_token_type', 'scope', 'token_type']);
      expect(res.body.issued_token_type).toBe(ACCESS_TOKEN_TYPE);
      expect(res.body.token_type).toBe('Bearer');
      expect(res.body.scope).toBe('orders:read');

      const subject = decodeJwt(issued.access).payload;
      const { header } = decodeJwt(res.body.access_token);
      expect(header).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
      const claims = await claimsOf(res.body.access_token, BILLING);
      expect(claims).toMatchObject({
        iss: t.config.issuer,
        sub: issued.userId,
        aud: BILLING,
        client_id: agent.client_id,
        scope: 'orders:read',
        gid: subject.gid,
        act: { sub: agent.client_id, client_id: agent.client_id },
      });
      expect(claims.jti).not.toBe(subject.jti);
      // It never outlives the token it came from.
      expect(claims.exp).toBe(subject.exp);
      expect(res.body.expires_in).toBe(claims.exp! - claims.iat!);
      expect(res.body.expires_in).toBeGreaterThan(ACCESS_TOKEN_TTL - 5);
      expect(res.body.expires_in).toBeLessThanOrEqual(ACCESS_TOKEN_TTL);
    });

    it('introspects with act and the new aud; the API refuses a token aimed at billing; the event is recorded', async () => {
      const issued = await personsTokens();
      const billingToken = await exchanged(agent, issued.access, { resource: BILLING, scope: 'orders:read' });

      const res = await introspect(agent, billingToken);
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      const claims = await claimsOf(billingToken, BILLING);
      expect(res.body).toEqual({
        active: true,
        scope: 'orders:read',
        client_id: agent.client_id,
        sub: issued.userId,
        exp: claims.exp,
        iat: claims.iat,
        iss: t.config.issuer,
        aud: BILLING,
        token_type: 'Bearer',
        act: { sub: agent.client_id, client_id: agent.client_id },
      });
      // Another client's token: nothing said (RFC 7662), the tool's own included.
      const other = await registerClient(t, { name: 'Other' });
      expect((await introspect(other, billingToken)).body).toEqual({ active: false });

      const api = await t
        .http()
        .get('/api/resource')
        .set(...bearer(billingToken));
      expect(api.status).toBe(401);
      expect(api.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="invalid_token"'));

      const events = await t.app
        .get(AuditService)
        .list(Object.assign(new AuditEventsQueryDto(), { type: 'token.exchanged', user_id: issued.userId }));
      expect(events.data).toEqual([
        expect.objectContaining({
          type: 'token.exchanged',
          actor: `client:${agent.client_id}`,
          user_id: issued.userId,
          client_id: agent.client_id,
          details: { scope: 'orders:read', aud: BILLING, act_sub: agent.client_id, subject_client_id: agent.client_id },
        }),
      ]);
      // No token in the trail.
      expect(JSON.stringify(events.data)).not.toContain(billingToken.split('.')[2]);
    });

    it("keeps the subject token's aud and scope when neither is asked for, and that token works at the API", async () => {
      const issued = await personsTokens('users:read orders:read');
      const res = await exchange(agent, { subject_token: issued.access, subject_token_type: JWT_TOKEN_TYPE });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.scope).toBe('users:read orders:read');
      const api = await t
        .http()
        .get('/api/resource')
        .set(...bearer(res.body.access_token));
      expect(api.status).toBe(200);
      expect(api.body.data).toMatchObject({ sub: issued.userId, client_id: agent.client_id, scope: 'users:read orders:read' });
      expect((await claimsOf(res.body.access_token, t.config.audience)).aud).toBe(t.config.audience);
    });

    it('takes resource and audience (repeatable) together: aud is the list; requested_token_type access_token is fine', async () => {
      const issued = await personsTokens();
      const body = new URLSearchParams([
        ['grant_type', TOKEN_EXCHANGE_GRANT],
        ['subject_token', issued.access],
        ['subject_token_type', ACCESS_TOKEN_TYPE],
        ['requested_token_type', ACCESS_TOKEN_TYPE],
        ['resource', BILLING],
        ['audience', t.config.audience],
        ['scope', 'orders:read'],
      ]);
      const res = await t.http().post('/token').auth(agent.client_id, agent.client_secret!).type('form').send(body.toString());
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect((await claimsOf(res.body.access_token, BILLING)).aud).toEqual([BILLING, t.config.audience]);
      expect(await resourceStatus(t, res.body.access_token)).toBe(200);
    });

    it('names the actor of an actor_token in act (its sub and client), and refuses a half-given, bad or foreign actor token', async () => {
      const issued = await personsTokens();
      // A colleague's token, issued to the same client: the colleague is named as the actor.
      const colleague = await personsTokens('orders:read');
      const byColleague = await exchanged(agent, issued.access, { actor_token: colleague.access, actor_token_type: JWT_TOKEN_TYPE });
      expect(await claimsOf(byColleague, t.config.audience)).toMatchObject({
        sub: issued.userId,
        client_id: agent.client_id,
        act: { sub: colleague.userId, client_id: agent.client_id },
      });
      expect((await introspect(agent, byColleague)).body.act).toEqual({ sub: colleague.userId, client_id: agent.client_id });

      // Another client's token (here a tool's own client-credentials token) is no actor this client can vouch for:
      // it could have seen it passing by.
      const actorToken = await machineToken();
      const byTool = await exchange(agent, {
        subject_token: issued.access,
        subject_token_type: ACCESS_TOKEN_TYPE,
        actor_token: actorToken,
        actor_token_type: ACCESS_TOKEN_TYPE,
      });
      expectOAuthError(byTool, 400, 'invalid_grant');
      expect(byTool.body.error_description).toBe('The actor_token must have been issued to this client.');

      const base = { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE };
      expectOAuthError(await exchange(agent, { ...base, actor_token: actorToken }), 400, 'invalid_request');
      expectOAuthError(await exchange(agent, { ...base, actor_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_request');
      expectOAuthError(
        await exchange(agent, { ...base, actor_token: actorToken, actor_token_type: 'urn:ietf:params:oauth:token-type:id_token' }),
        400,
        'invalid_request',
      );
      const foreign = await signWithForeignKey(genuineClaims(t, tool.client_id, { client_id: tool.client_id }), 'foreign-actor-key');
      expectOAuthError(await exchange(agent, { ...base, actor_token: foreign, actor_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_grant');
      expectOAuthError(
        await exchange(agent, { ...base, actor_token: 'garbage', actor_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );

      // The colleague's grant revoked: their token acts for nobody any more.
      expect((await backChannel(t, '/revoke', agent, { token: colleague.refresh })).status).toBe(200);
      expectOAuthError(
        await exchange(agent, { ...base, actor_token: colleague.access, actor_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );
    });
  });

  describe('chains of exchanges', () => {
    it('nests act at each exchange, down a chain of services, each acting for the person; revoking the grant ends them all', async () => {
      const billing = await resourceServer('Billing service', [BILLING, REPORTS]);
      const reports = await resourceServer('Reports service', [REPORTS]);
      const issued = await personsTokens();

      // The agent calls billing for the person; billing calls reports; reports calls this API.
      const t1 = await exchanged(agent, issued.access, { resource: BILLING });
      const t2 = await exchanged(billing, t1, { resource: REPORTS, scope: 'orders:read' });
      const t3 = await exchanged(reports, t2, { resource: t.config.audience });

      const agentAct = { sub: agent.client_id, client_id: agent.client_id };
      const billingAct = { sub: billing.client_id, client_id: billing.client_id, act: agentAct };
      const reportsAct = { sub: reports.client_id, client_id: reports.client_id, act: billingAct };
      expect(await claimsOf(t2, REPORTS)).toMatchObject({
        sub: issued.userId,
        client_id: billing.client_id,
        scope: 'orders:read',
        act: billingAct,
      });
      expect(await claimsOf(t3, t.config.audience)).toMatchObject({ sub: issued.userId, client_id: reports.client_id, act: reportsAct });
      const api = await t
        .http()
        .get('/api/resource')
        .set(...bearer(t3));
      expect(api.status).toBe(200);
      expect(api.body.data).toMatchObject({ sub: issued.userId, client_id: reports.client_id, scope: 'orders:read' });
      expect((await introspect(reports, t3)).body).toMatchObject({ active: true, act: reportsAct, aud: t.config.audience });
      expect((await introspect(billing, t2)).body).toMatchObject({ active: true, act: billingAct, aud: REPORTS });

      // The person's grant revoked by the agent (RFC 7009, its refresh token): every link of the chain dies.
      expect((await backChannel(t, '/revoke', agent, { token: issued.refresh })).status).toBe(200);
      expect(await resourceStatus(t, t3)).toBe(401);
      expect((await introspect(reports, t3)).body).toEqual({ active: false });
      expect((await introspect(billing, t2)).body).toEqual({ active: false });
      expect((await introspect(agent, t1)).body).toEqual({ active: false });
      expectOAuthError(await exchange(reports, { subject_token: t2, subject_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_grant');
    });

    it(`nests an exchange of an exchanged token, and ends a chain at ${MAX_ACTORS} actors`, async () => {
      const issued = await personsTokens();
      const colleague = await personsTokens('orders:read');
      const once = await exchanged(agent, issued.access);
      const twice = await exchanged(agent, once, { actor_token: colleague.access, actor_token_type: ACCESS_TOKEN_TYPE });
      expect((await claimsOf(twice, t.config.audience)).act).toEqual({
        sub: colleague.userId,
        client_id: agent.client_id,
        act: { sub: agent.client_id, client_id: agent.client_id },
      });
      let current = twice;
      for (let actors = 2; actors < MAX_ACTORS; actors += 1) current = await exchanged(agent, current);
      let depth = 0;
      for (let act = (await claimsOf(current, t.config.audience)).act as { act?: unknown } | undefined; act; act = act.act as typeof act) {
        depth += 1;
      }
      expect(depth).toBe(MAX_ACTORS);
      expectOAuthError(await exchange(agent, { subject_token: current, subject_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_grant');
    });
  });

  describe('whose tokens, and what for', () => {
    it("refuses another client's token aimed only at the API (unless the API is registered for the exchanging client), and a client's own token (client credentials) as the subject", async () => {
      const other = await registerClient(t, { name: 'Other app', trusted: true });
      const othersToken = (await issueTokens(t, { client: other })).access;
      expectOAuthError(await exchange(agent, { subject_token: othersToken, subject_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_grant');
      // A resource server may exchange only the tokens aimed at its own resource.
      const billing = await resourceServer('Billing service', [BILLING]);
      expectOAuthError(
        await exchange(billing, { subject_token: othersToken, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );

      // Unless an operator registered the API for it explicitly: a gateway in front of the API speaks for it.
      const gateway = await resourceServer('API gateway', [t.config.audience]);
      const viaGateway = await exchange(gateway, {
        subject_token: othersToken,
        subject_token_type: ACCESS_TOKEN_TYPE,
        scope: 'orders:read',
      });
      expect(viaGateway.status, JSON.stringify(viaGateway.body)).toBe(200);
      expect((await claimsOf(viaGateway.body.access_token, t.config.audience)).act).toEqual({
        sub: gateway.client_id,
        client_id: gateway.client_id,
      });

      const both = await registerClient(t, {
        name: 'Service and exchanger',
        redirectUris: [],
        grantTypes: ['client_credentials', TOKEN_EXCHANGE_GRANT],
        scope: 'orders:read',
      });
      const own = await token(t, both, { grant_type: 'client_credentials' });
      expect(own.status).toBe(200);
      expectOAuthError(
        await exchange(both, { subject_token: own.body.access_token, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );
    });

    it("refuses a wider scope than the subject token's with invalid_scope, and an empty one", async () => {
      const issued = await personsTokens('orders:read');
      const base = { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE };
      expectOAuthError(await exchange(agent, { ...base, scope: 'orders:read orders:write' }), 400, 'invalid_scope');
      expectOAuthError(await exchange(agent, { ...base, scope: 'users:read' }), 400, 'invalid_scope');
      expectOAuthError(await exchange(agent, { ...base, scope: ' ' }), 400, 'invalid_scope');
      // A downstream service gets no scope it is not allowed, even when the person gave it to the agent.
      const narrow = await registerClient(t, {
        name: 'Narrow billing',
        redirectUris: [],
        grantTypes: [TOKEN_EXCHANGE_GRANT],
        resources: [BILLING],
        scope: 'users:read',
      });
      const billingToken = await exchanged(agent, issued.access, { resource: BILLING });
      expectOAuthError(
        await exchange(narrow, { subject_token: billingToken, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_scope',
      );
    });

    it("refuses a target the client may not ask tokens for with invalid_target (resource, audience, or the subject token's own)", async () => {
      const issued = await personsTokens();
      const base = { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE };
      expectOAuthError(await exchange(agent, { ...base, resource: REPORTS }), 400, 'invalid_target');
      expectOAuthError(await exchange(agent, { ...base, audience: REPORTS }), 400, 'invalid_target');
      expectOAuthError(await exchange(agent, { ...base, audience: 'billing' }), 400, 'invalid_target');
      expectOAuthError(await exchange(agent, { ...base, resource: `${BILLING}#fragment` }), 400, 'invalid_target');
      // Billing may exchange a token aimed at it, but the token's other resource is not one it may name.
      const billing = await resourceServer('Billing only', [BILLING]);
      const wide = await exchanged(agent, issued.access, { resource: BILLING, audience: t.config.audience });
      expect((await exchange(billing, { subject_token: wide, subject_token_type: ACCESS_TOKEN_TYPE })).status).toBe(200);
      const reportsToo = await registerClient(t, {
        name: 'Reports and billing',
        trusted: true,
        grantTypes: ['authorization_code', TOKEN_EXCHANGE_GRANT],
        resources: [BILLING, REPORTS],
      });
      const tokenForBoth = await exchanged(reportsToo, (await issueTokens(t, { client: reportsToo })).access, {
        resource: BILLING,
        audience: REPORTS,
      });
      expectOAuthError(
        await exchange(billing, { subject_token: tokenForBoth, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_target',
      );
    });

    it('refuses missing or unsupported token types with invalid_request', async () => {
      const issued = await personsTokens();
      expectOAuthError(await exchange(agent, { subject_token: issued.access }), 400, 'invalid_request');
      expectOAuthError(await exchange(agent, { subject_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_request');
      expectOAuthError(await exchange(agent, { subject_token: issued.access, subject_token_type: '' }), 400, 'invalid_request');
      expectOAuthError(
        await exchange(agent, { subject_token: issued.refresh, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }),
        400,
        'invalid_request',
      );
      for (const requested of [
        'urn:ietf:params:oauth:token-type:refresh_token',
        'urn:ietf:params:oauth:token-type:id_token',
        JWT_TOKEN_TYPE,
      ]) {
        expectOAuthError(
          await exchange(agent, { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE, requested_token_type: requested }),
          400,
          'invalid_request',
        );
      }
      // A parameter sent twice is refused as everywhere at /token.
      const twice = await t
        .http()
        .post('/token')
        .auth(agent.client_id, agent.client_secret!)
        .type('form')
        .send(
          new URLSearchParams([
            ['grant_type', TOKEN_EXCHANGE_GRANT],
            ['subject_token', issued.access],
            ['subject_token', issued.access],
            ['subject_token_type', ACCESS_TOKEN_TYPE],
          ]).toString(),
        );
      expectOAuthError(twice, 400, 'invalid_request');
    });
  });

  describe('subject tokens that are not valid', () => {
    it('refuses a token signed with a key of its own, one of another issuer, an expired one and garbage with invalid_grant', async () => {
      const issued = await personsTokens();
      const genuine = decodeJwt(issued.access).payload;
      const like = (overrides: Record<string, unknown>) =>
        genuineClaims(t, issued.userId, { client_id: agent.client_id, gid: genuine.gid, scope: genuine.scope, ...overrides });
      const now = Math.floor(Date.now() / 1000);
      const refused = [
        await signWithForeignKey(like({}), 'attacker-key'),
        await signWithForeignKey(like({}), decodeJwt(issued.access).header.kid as string),
        await signWithServiceKey(t, like({ iss: 'https://evil.example' })),
        await signWithServiceKey(t, like({ iat: now - 1000, exp: now - 10 })),
        await signWithServiceKey(t, like({}), { typ: 'JWT' }),
        `${issued.access.slice(0, -4)}AAAA`,
        'not-a-token',
      ];
      for (const subject of refused) {
        const res = await exchange(agent, { subject_token: subject, subject_token_type: ACCESS_TOKEN_TYPE });
        expectOAuthError(res, 400, 'invalid_grant');
      }
      // The genuine one still works.
      expect((await exchange(agent, { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE })).status).toBe(200);
    });

    it('refuses a token of a revoked grant, also when another instance revoked it a moment ago (the database decides)', async () => {
      const revoked = await personsTokens();
      expect((await backChannel(t, '/revoke', agent, { token: revoked.refresh })).status).toBe(200);
      expectOAuthError(
        await exchange(agent, { subject_token: revoked.access, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );

      // Revoked in the database only, as by another instance whose revocation this one has not synced yet.
      const elsewhere = await personsTokens();
      const grantId = decodeJwt(elsewhere.access).payload.gid as string;
      await t.app.get(SqlRunner).run(sql`UPDATE grants SET revoked_at = :now WHERE id = :grantId`, { now: Date.now(), grantId });
      expect(await resourceStatus(t, elsewhere.access)).toBe(200);
      expectOAuthError(
        await exchange(agent, { subject_token: elsewhere.access, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );
      // A grant the server never issued (a made-up gid on a genuine signature).
      const madeUp = await signWithServiceKey(t, genuineClaims(t, elsewhere.userId, { client_id: agent.client_id, gid: randomUUID() }));
      expectOAuthError(await exchange(agent, { subject_token: madeUp, subject_token_type: ACCESS_TOKEN_TYPE }), 400, 'invalid_grant');
    });

    it('ends the exchanged token when the grant dies by refresh-token reuse', async () => {
      const issued = await personsTokens();
      const exchangedToken = await exchanged(agent, issued.access);
      expect(await resourceStatus(t, exchangedToken)).toBe(200);
      expect((await token(t, agent, { grant_type: 'refresh_token', refresh_token: issued.refresh })).status).toBe(200);
      expectOAuthError(await token(t, agent, { grant_type: 'refresh_token', refresh_token: issued.refresh }), 400, 'invalid_grant');
      expect(await resourceStatus(t, exchangedToken)).toBe(401);
      expect((await introspect(agent, exchangedToken)).body).toEqual({ active: false });
    });

    it("ends the tokens a client obtained by exchange when the client is deleted; the person's own tokens and those of others live on", async () => {
      const adminToken = await t.token((await t.createUser({ role: 'admin' })).id, ['clients:admin']);
      const billing = await resourceServer('Short-lived billing', [BILLING]);
      const reports = await resourceServer('Reports', [BILLING]);
      const issued = await personsTokens();
      const billingToken = await exchanged(agent, issued.access, { resource: BILLING });
      const heldByBilling = await exchanged(billing, billingToken, { resource: t.config.audience });
      const heldByReports = await exchanged(reports, billingToken, { resource: t.config.audience });
      expect(await resourceStatus(t, heldByBilling)).toBe(200);

      const deleted = await t
        .http()
        .delete(`/admin/clients/${billing.client_id}`)
        .set(...bearer(adminToken));
      expect(deleted.status).toBe(204);
      expect(await resourceStatus(t, heldByBilling)).toBe(401);
      expect(await resourceStatus(t, heldByReports)).toBe(200);
      expect(await resourceStatus(t, issued.access)).toBe(200);
      expect((await introspect(agent, billingToken)).body.active).toBe(true);
    });

    it("ends the tokens other clients exchanged from a deleted client's grants (one revoked-list entry for the client)", async () => {
      const adminToken = await t.token((await t.createUser({ role: 'admin' })).id, ['clients:admin']);
      const app = await registerClient(t, {
        name: 'Retired app',
        trusted: true,
        grantTypes: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE_GRANT],
        resources: [BILLING],
      });
      const billing = await resourceServer('Billing of the retired app', [BILLING]);
      const issued = await issueTokens(t, { client: app, scope: 'users:read orders:read' });
      const appsBillingToken = await exchanged(app, issued.access, { resource: BILLING });
      const heldByBilling = await exchanged(billing, appsBillingToken, { resource: t.config.audience });
      // The grant's client rides along, through every exchange after the first.
      expect((await claimsOf(heldByBilling, t.config.audience)).gcid).toBe(app.client_id);
      expect((await claimsOf(appsBillingToken, BILLING)).gcid).toBeUndefined();
      const others = await personsTokens();
      expect(await resourceStatus(t, heldByBilling)).toBe(200);

      const deleted = await t
        .http()
        .delete(`/admin/clients/${app.client_id}`)
        .set(...bearer(adminToken));
      expect(deleted.status).toBe(204);
      expect(await resourceStatus(t, heldByBilling)).toBe(401);
      expect(await resourceStatus(t, issued.access)).toBe(401);
      expect((await introspect(billing, heldByBilling)).body).toEqual({ active: false });
      expect(await resourceStatus(t, others.access)).toBe(200);
      const entries = await t.app
        .get(SqlRunner)
        .run<{ grant_id: string }>(sql`SELECT grant_id FROM revoked_grants WHERE grant_id LIKE :pattern`, {
          pattern: `%${app.client_id}%`,
        });
      expect(entries.rows.map((row) => row.grant_id)).toEqual([`client:${app.client_id}`]);
    });

    it('ends the exchanged token when the person revokes the app on the connected-apps page', async () => {
      const issued = await personsTokens();
      const exchangedToken = await exchanged(agent, issued.access, { resource: BILLING });
      expect((await introspect(agent, exchangedToken)).body.active).toBe(true);
      const page = await issued.browser.get('/account/apps');
      expect(page.status).toBe(200);
      const form = parseForms(page.text).find((f) => f.action === '/account/apps/revoke' && f.hidden.client_id === agent.client_id);
      expect(form).toBeDefined();
      const res: Response = await issued.browser.post('/account/apps/revoke', form!.hidden);
      expect(res.status).toBe(303);
      expect((await introspect(agent, exchangedToken)).body).toEqual({ active: false });
      expectOAuthError(
        await exchange(agent, { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'invalid_grant',
      );
    });
  });

  describe('which clients may exchange', () => {
    it('answers unauthorized_client to a client without the grant, and invalid_client to a public client', async () => {
      const plain = await registerClient(t, { name: 'Plain app', trusted: true });
      const issued = await issueTokens(t, { client: plain });
      expectOAuthError(
        await exchange(plain, { subject_token: issued.access, subject_token_type: ACCESS_TOKEN_TYPE }),
        400,
        'unauthorized_client',
      );

      const spa = await registerClient(t, { name: 'Browser app', isPublic: true, trusted: true });
      const spaTokens = await issueTokens(t, { client: spa });
      expectOAuthError(
        await exchange(spa, { subject_token: spaTokens.access, subject_token_type: ACCESS_TOKEN_TYPE }),
        401,
        'invalid_client',
      );
    });

    it('gives the grant to confidential clients only: client:create, the admin API and registration with the initial access token', async () => {
      const clients = t.app.get(ClientsService);
      await expect(
        clients.create({ name: 'Public agent', redirectUris: ['http://127.0.0.1/cb'], isPublic: true, grantTypes: [TOKEN_EXCHANGE_GRANT] }),
      ).rejects.toThrow(InvalidClientInputError);
      await expect(
        clients.create({ name: 'Public agent', redirectUris: ['http://127.0.0.1/cb'], isPublic: true, grantTypes: [TOKEN_EXCHANGE_GRANT] }),
      ).rejects.toThrow(`--grant ${TOKEN_EXCHANGE_GRANT} is for confidential clients only`);

      const adminToken = await t.token((await t.createUser({ role: 'admin' })).id, ['clients:admin']);
      const byAdmin = await t
        .http()
        .post('/admin/clients')
        .set(...bearer(adminToken))
        .send({ name: 'Billing service', grant_types: [TOKEN_EXCHANGE_GRANT], resources: [BILLING], redirect_uris: [] });
      expect(byAdmin.status, JSON.stringify(byAdmin.body)).toBe(201);
      expect(byAdmin.body).toMatchObject({ grant_types: [TOKEN_EXCHANGE_GRANT], resources: [BILLING], public: false });
      const publicByAdmin = await t
        .http()
        .post('/admin/clients')
        .set(...bearer(adminToken))
        .send({ name: 'Public agent', public: true, grant_types: ['authorization_code', TOKEN_EXCHANGE_GRANT], redirect_uris: [REDIRECT] });
      expect(publicByAdmin.status).toBe(400);
      expect(publicByAdmin.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(publicByAdmin.body.detail).toContain(`${TOKEN_EXCHANGE_GRANT} is for confidential clients only`);

      const registered = await t
        .http()
        .post('/register')
        .set('Authorization', `Bearer ${INITIAL_TOKEN}`)
        .send({
          client_name: 'Registered exchanger',
          grant_types: [TOKEN_EXCHANGE_GRANT],
          token_endpoint_auth_method: 'client_secret_basic',
        });
      expect(registered.status, JSON.stringify(registered.body)).toBe(201);
      expect(registered.body).toMatchObject({ grant_types: [TOKEN_EXCHANGE_GRANT], redirect_uris: [], response_types: [] });
      expect(registered.body.client_secret).toEqual(expect.any(String));

      const open = await t
        .http()
        .post('/register')
        .send({
          client_name: 'Open agent',
          redirect_uris: ['http://127.0.0.1:8765/cb'],
          grant_types: ['authorization_code', TOKEN_EXCHANGE_GRANT],
          token_endpoint_auth_method: 'none',
        });
      expect(open.status).toBe(400);
      expect(open.body.error).toBe('invalid_client_metadata');
      expect(open.body.error_description).toContain(`${TOKEN_EXCHANGE_GRANT} is for confidential clients only`);
    });

    it('lists the grant in the server metadata', async () => {
      const res = await t.http().get('/.well-known/oauth-authorization-server');
      expect(res.status).toBe(200);
      expect(res.body.grant_types_supported).toEqual([
        'authorization_code',
        'refresh_token',
        'client_credentials',
        TOKEN_EXCHANGE_GRANT,
        'urn:ietf:params:oauth:grant-type:device_code',
      ]);
    });
  });
});
