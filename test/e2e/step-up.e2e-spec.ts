import { Controller, Get, Module } from '@nestjs/common';
import { ApiOkResponse } from '@nestjs/swagger';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Access } from '../../src/auth/auth.decorators';
import { scopeDescription } from '../../src/auth/scopes';
import { SqlRunner, sql } from '../../src/database/sql';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { OrdersScope } from '../../src/orders/orders.scopes';
import { UsersScope } from '../../src/users/users.scopes';
import {
  Browser,
  NO_RATE_LIMITS,
  authorizePath,
  decodeJwt,
  parseForm,
  pkcePair,
  redirectParams,
  registerClient,
  signedIn,
  token,
} from '../support/oauth';
import { expectProblem } from '../support/problem';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

const READ = OrdersScope.read;
const WRITE = OrdersScope.write;
const USERS_READ = UsersScope.read;

const CONSENT_ROWS = sql`SELECT scope FROM consents WHERE user_id = :userId AND client_id = :clientId`;
const CONSENT_EVENTS = sql`
  SELECT details FROM audit_events WHERE type = 'consent.granted' AND user_id = :userId AND client_id = :clientId ORDER BY seq`;

/** A route that needs two scopes, so that the challenge can be seen naming every one of them. */
@Controller('step-up-probe')
class TwoScopeController {
  @Get()
  @Access({ scopes: [OrdersScope.read, UsersScope.read], people: 'any' })
  @ApiOkResponse({ description: 'The token has both scopes' })
  probe(): { ok: true } {
    return { ok: true };
  }
}

@Module({ controllers: [TwoScopeController] })
class TwoScopeModule {}

/** A `WWW-Authenticate` challenge read as RFC 9110 11.6.1 writes it: a scheme, then `name="quoted-string"` pairs. */
function parseChallenge(header: string | undefined): { scheme: string; params: Record<string, string> } {
  expect(header).toBeDefined();
  const [, scheme, rest] = /^(\S+) (.*)$/.exec(header!)!;
  const params: Record<string, string> = {};
  const pair = /([A-Za-z_]+)="((?:[^"\\]|\\.)*)"(?:, |$)/y;
  let match: RegExpExecArray | null;
  while ((match = pair.exec(rest))) {
    expect(params, `${match[1]} given twice`).not.toHaveProperty(match[1]);
    params[match[1]] = match[2].replace(/\\(.)/g, '$1');
    if (pair.lastIndex === rest.length) break;
  }
  expect(pair.lastIndex, `the whole challenge parses: ${header}`).toBe(rest.length);
  return { scheme, params };
}

/** The scopes of the consent page: those it asks for, and those it says the client already has. */
function consentScopes(page: Response): { asked: string[]; already: string[] } {
  const list = (cls: string) => {
    const ul = new RegExp(`<ul class="${cls}">([\\s\\S]*?)</ul>`).exec(page.text);
    return ul ? [...ul[1].matchAll(/<code>([^<]*)<\/code>/g)].map((m) => m[1]) : [];
  };
  return { asked: list('scopes'), already: list('scopes granted') };
}

describe('scope challenges and step-up authorization', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS, undefined, { imports: [TwoScopeModule] });
  });
  afterAll(() => t.close());

  const metadataUrl = () => `${t.config.issuer}/.well-known/oauth-protected-resource`;

  async function consentRows(userId: string, clientId: string): Promise<{ scope: string }[]> {
    return (await t.app.get(SqlRunner).run<{ scope: string }>(CONSENT_ROWS, { userId, clientId })).rows;
  }

  async function authorize(browser: Browser, client: ClientView, scope: string, extra: Record<string, string> = {}) {
    const pkce = pkcePair();
    const res = await browser.get(
      authorizePath({
        response_type: 'code',
        client_id: client.client_id,
        scope,
        state: 'st',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
        ...extra,
      }),
    );
    return { res, verifier: pkce.verifier };
  }

  /** Redeems the code of a redirect to the client; returns the token response's body. */
  async function redeem(client: ClientView, redirect: Response, verifier: string) {
    const params = redirectParams(redirect);
    expect(params.get('state')).toBe('st');
    const res = await token(t, client, { grant_type: 'authorization_code', code: params.get('code')!, code_verifier: verifier });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { access_token: string; refresh_token: string; scope: string };
  }

  /** Authorizes `scope` through the consent page (it must be shown), allows, and redeems the code. */
  async function consentAndRedeem(browser: Browser, client: ClientView, scope: string) {
    const { res, verifier } = await authorize(browser, client, scope);
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    return redeem(client, await browser.submit(res, { decision: 'allow' }), verifier);
  }

  const listOrders = (userId: string, access: string) =>
    t
      .http()
      .get(`/users/${userId}/orders`)
      .set(...bearer(access));
  const createOrder = (userId: string, access: string) =>
    t
      .http()
      .post(`/users/${userId}/orders`)
      .set(...bearer(access))
      .send({ item: 'Step-up lamp', quantity: 1, unitPriceCents: 1200, currency: 'EUR' });

  describe('the 403 insufficient_scope challenge', () => {
    it('names every scope the route needs and the protected-resource metadata the 401 names; the body stays problem+json', async () => {
      const user = await t.createUser();
      const res = await t
        .http()
        .get('/step-up-probe')
        .set(...bearer(await t.token(user.id, [READ])));
      expectProblem(res, 403, '/step-up-probe');
      expect(res.body.type).toBe('urn:problem-type:insufficient-scope');
      expect(res.body.detail).toBe(`This request needs the scope ${READ} ${USERS_READ}.`);
      expect(res.headers['www-authenticate']).toBe(
        `Bearer error="insufficient_scope", scope="${READ} ${USERS_READ}", resource_metadata="${metadataUrl()}"`,
      );
      const challenge = parseChallenge(res.headers['www-authenticate']);
      expect(challenge.scheme).toBe('Bearer');
      expect(Object.keys(challenge.params)).toEqual(['error', 'scope', 'resource_metadata']);
      expect(challenge.params.error).toBe('insufficient_scope');
      expect(challenge.params.scope.split(' ').sort()).toEqual([READ, USERS_READ].sort());
      expect(challenge.params.resource_metadata).toBe(metadataUrl());

      // The 401 of the same route names the same scopes and metadata, which answers and names this API.
      const none = await t.http().get('/step-up-probe');
      expect(none.status).toBe(401);
      expect(parseChallenge(none.headers['www-authenticate']).params).toEqual({
        realm: 'api',
        scope: 'orders:read users:read',
        resource_metadata: metadataUrl(),
      });
      const metadata = await t.http().get(new URL(challenge.params.resource_metadata).pathname);
      expect(metadata.status).toBe(200);
      expect(metadata.body.resource).toBe(t.config.audience);
      expect(metadata.body.scopes_supported).toEqual(expect.arrayContaining([READ, USERS_READ]));
      expect(metadata.body.scopes_supported).not.toContain('offline_access');

      const both = await t
        .http()
        .get('/step-up-probe')
        .set(...bearer(await t.token(user.id, [READ, USERS_READ])));
      expect(both.status).toBe(200);
      expect(both.body).toEqual({ ok: true });
    });

    it('at /userinfo: a token without openid gets insufficient_scope, and a client-credentials token with openid a Bearer challenge too', async () => {
      const user = await t.createUser();
      const noOpenid = await t
        .http()
        .get('/userinfo')
        .set(...bearer(await t.token(user.id, 'profile email')));
      expectProblem(noOpenid, 403, '/userinfo');
      expect(noOpenid.headers['www-authenticate']).toBe(
        `Bearer error="insufficient_scope", scope="openid", resource_metadata="${metadataUrl()}"`,
      );

      const service = await registerClient(t, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'openid profile' });
      const issued = await token(t, service, { grant_type: 'client_credentials', scope: 'openid profile' });
      expect(issued.status, JSON.stringify(issued.body)).toBe(200);
      for (const method of ['get', 'post'] as const) {
        const res = await t
          .http()
          [method]('/userinfo')
          .set(...bearer(issued.body.access_token));
        expectProblem(res, 403, '/userinfo');
        expect(res.body.type).toBe('urn:problem-type:user-token-required');
        const challenge = parseChallenge(res.headers['www-authenticate']);
        expect(challenge.scheme).toBe('Bearer');
        // Not insufficient_scope: no scope would make a token without a user acceptable here.
        expect(challenge.params).toEqual({
          error: 'invalid_token',
          error_description: 'This route acts for a signed-in user; a client-credentials token cannot call it.',
          resource_metadata: metadataUrl(),
        });
      }
      // Whatever scopes it lacks, such a token is told the same (asking for more scopes would not help it).
      const orders = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...bearer(issued.body.access_token));
      expectProblem(orders, 403, `/users/${user.id}/orders`);
      expect(parseChallenge(orders.headers['www-authenticate']).params.error).toBe('invalid_token');
    });
  });

  describe('step-up at /authorize', () => {
    it('asks only for the new scopes, grows the one consent to the union, and the new tokens carry the union', async () => {
      const client = await registerClient(t, { scope: `${READ} ${WRITE} ${USERS_READ}` });
      const { user, browser } = await signedIn(t);

      // First authorization: orders:read, through the consent page.
      const first = await authorize(browser, client, READ);
      expect(first.res.status).toBe(200);
      expect(consentScopes(first.res)).toEqual({ asked: [READ], already: [] });
      expect(first.res.text).toContain(`${client.name} wants access to your account`);
      const narrow = await redeem(client, await browser.submit(first.res, { decision: 'allow' }), first.verifier);
      expect(narrow.scope).toBe(READ);
      expect((await listOrders(user.id, narrow.access_token)).status).toBe(200);

      // A route needing orders:write: the challenge names it.
      const refused = await createOrder(user.id, narrow.access_token);
      expectProblem(refused, 403, `/users/${user.id}/orders`);
      const challenge = parseChallenge(refused.headers['www-authenticate']);
      expect(challenge.params).toEqual({ error: 'insufficient_scope', scope: WRITE, resource_metadata: metadataUrl() });

      // The client asks for what it had plus what the challenge named: the page asks for the new scope only.
      const union = `${READ} ${challenge.params.scope}`;
      const second = await authorize(browser, client, union);
      expect(second.res.status).toBe(200);
      expect(consentScopes(second.res)).toEqual({ asked: [WRITE], already: [READ] });
      expect(second.res.text).toContain(`${client.name} wants more access to your account`);
      expect(second.res.text).toContain(`will also be able to:</p>\n<ul class="scopes"><li><strong>${scopeDescription(WRITE)}</strong>`);
      const form = parseForm(second.res.text);
      expect(form.action).toBe('/authorize/consent');
      expect(form.hidden.scope).toBe(union);

      const wide = await redeem(client, await browser.submit(second.res, { decision: 'allow' }), second.verifier);
      expect(wide.scope).toBe(union);
      expect(decodeJwt(wide.access_token).payload.scope).toBe(union);
      const created = await createOrder(user.id, wide.access_token);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.item).toBe('Step-up lamp');

      // One consent row for the person and the client, holding the union.
      const rows = await consentRows(user.id, client.client_id);
      expect(rows).toHaveLength(1);
      expect(rows[0].scope.split(' ').sort()).toEqual([READ, WRITE].sort());
      // The connected-apps page shows the client once, with the union.
      const apps = await browser.get('/account/apps');
      expect(apps.status).toBe(200);
      const cards = [...apps.text.matchAll(/<li class="card">([\s\S]*?)<\/form><\/li>/g)].map((m) => m[1]);
      expect(cards).toHaveLength(1);
      expect(cards[0]).toContain(`<h2>${client.name}</h2>`);
      expect([...cards[0].matchAll(/<code>([^<]*)<\/code>/g)].map((m) => m[1])).toEqual([READ, WRITE].sort());

      // The earlier, narrower tokens keep their scope: still orders:read only, also after a refresh.
      expect((await listOrders(user.id, narrow.access_token)).status).toBe(200);
      expect((await createOrder(user.id, narrow.access_token)).status).toBe(403);
      const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: narrow.refresh_token });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
      expect(refreshed.body.scope).toBe(READ);
      const widened = await token(t, client, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token, scope: union });
      expect(widened.status).toBe(400);
      expect(widened.body.error).toBe('invalid_scope');

      // The events: the second consent says what it added.
      const events = (await t.app.get(SqlRunner).run<{ details: string }>(CONSENT_EVENTS, { userId: user.id, clientId: client.client_id }))
        .rows;
      expect(events.map((e) => JSON.parse(e.details))).toEqual([
        { scope: READ, added: READ },
        { scope: union, added: WRITE },
      ]);

      // Asked again for the union: no page now.
      const again = await authorize(browser, client, union);
      expect((await redeem(client, again.res, again.verifier)).scope).toBe(union);
    });

    it('denying the step-up keeps the earlier consent as it was', async () => {
      const client = await registerClient(t, { scope: `${READ} ${WRITE}` });
      const { user, browser } = await signedIn(t);
      await consentAndRedeem(browser, client, READ);

      const stepUp = await authorize(browser, client, `${READ} ${WRITE}`);
      expect(consentScopes(stepUp.res)).toEqual({ asked: [WRITE], already: [READ] });
      const denied = await browser.submit(stepUp.res, { decision: 'deny' });
      const params = redirectParams(denied);
      expect(denied.status).toBe(303);
      expect(params.get('error')).toBe('access_denied');
      expect(params.get('code')).toBeNull();
      expect(params.get('state')).toBe('st');

      expect(await consentRows(user.id, client.client_id)).toEqual([{ scope: READ }]);
      // orders:read still needs no page; the step-up still does.
      const read = await authorize(browser, client, READ);
      expect((await redeem(client, read.res, read.verifier)).scope).toBe(READ);
      const stillAsked = await authorize(browser, client, `${READ} ${WRITE}`);
      expect(stillAsked.res.status).toBe(200);
      expect(consentScopes(stillAsked.res)).toEqual({ asked: [WRITE], already: [READ] });
    });

    it('fewer scopes than consented: no page, and the tokens carry just those', async () => {
      const client = await registerClient(t, { scope: `${READ} ${WRITE}` });
      const { user, browser } = await signedIn(t);
      await consentAndRedeem(browser, client, `${READ} ${WRITE}`);

      const fewer = await authorize(browser, client, READ);
      expect(fewer.res.status).toBe(302);
      const tokens = await redeem(client, fewer.res, fewer.verifier);
      expect(tokens.scope).toBe(READ);
      expect(decodeJwt(tokens.access_token).payload.scope).toBe(READ);
      expect((await createOrder(user.id, tokens.access_token)).status).toBe(403);
      // The consent is not narrowed by asking for less.
      expect((await consentRows(user.id, client.client_id)).map((r) => r.scope.split(' ').sort())).toEqual([[READ, WRITE].sort()]);
    });

    it('prompt=consent shows the page for every requested scope, even those allowed before; prompt=none with new scopes is consent_required', async () => {
      const client = await registerClient(t, { scope: `${READ} ${WRITE}` });
      const { user, browser } = await signedIn(t);
      await consentAndRedeem(browser, client, READ);

      const forced = await authorize(browser, client, `${READ} ${WRITE}`, { prompt: 'consent' });
      expect(forced.res.status).toBe(200);
      expect(consentScopes(forced.res)).toEqual({ asked: [READ, WRITE], already: [] });
      const sameAgain = await authorize(browser, client, READ, { prompt: 'consent' });
      expect(consentScopes(sameAgain.res)).toEqual({ asked: [READ], already: [] });

      const silent = await authorize(browser, client, `${READ} ${WRITE}`, { prompt: 'none' });
      const params = redirectParams(silent.res);
      expect(params.get('error')).toBe('consent_required');
      expect(params.get('state')).toBe('st');
      expect(await consentRows(user.id, client.client_id)).toEqual([{ scope: READ }]);
    });

    it('two step-ups approved at once (two tabs) both end in the one consent: the union of all', async () => {
      const client = await registerClient(t, { scope: `${READ} ${WRITE} ${USERS_READ}` });
      const { user, browser } = await signedIn(t);
      await consentAndRedeem(browser, client, READ);

      const withWrite = await authorize(browser, client, `${READ} ${WRITE}`);
      const withUsers = await authorize(browser, client, `${READ} ${USERS_READ}`);
      expect(consentScopes(withWrite.res).asked).toEqual([WRITE]);
      expect(consentScopes(withUsers.res).asked).toEqual([USERS_READ]);
      const [a, b] = await Promise.all([
        browser.submit(withWrite.res, { decision: 'allow' }),
        browser.submit(withUsers.res, { decision: 'allow' }),
      ]);
      expect((await redeem(client, a, withWrite.verifier)).scope).toBe(`${READ} ${WRITE}`);
      expect((await redeem(client, b, withUsers.verifier)).scope).toBe(`${READ} ${USERS_READ}`);

      const rows = await consentRows(user.id, client.client_id);
      expect(rows).toHaveLength(1);
      expect(rows[0].scope.split(' ').sort()).toEqual([READ, WRITE, USERS_READ].sort());
      const all = await authorize(browser, client, `${READ} ${WRITE} ${USERS_READ}`);
      expect(all.res.status).toBe(302);
    });
  });
});
