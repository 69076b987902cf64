import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditScope } from '../../src/audit/audit.scopes';
import { SqlRunner, sql } from '../../src/database/sql';
import { allScopes, defaultClientScope, scopeRole } from '../../src/auth/scopes';
import { ClientsScope } from '../../src/oauth/clients/clients.scopes';
import { TOKEN_EXCHANGE_GRANT } from '../../src/oauth/entities/client.entity';
import {
  NO_RATE_LIMITS,
  REDIRECT_URI,
  authorizePath,
  decodeJwt,
  expectOAuthError,
  issueTokens,
  parseForm,
  pkcePair,
  redirectParams,
  registerClient,
  signedIn,
  token,
} from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';
import { ConnectionsScope } from '../../src/connections/connections.scopes';

/**
 * Least privilege: a scope bound to a role (`clients:admin`, `audit:read` to `admin`) never reaches the token of a
 * person without that role — not on the consent page, not in the grant, not in the token or the token response —
 * and a client registered without naming scopes does not get them.
 */
describe('scopes bound to a role', () => {
  let t: TestApp;
  const adminScopes: string[] = [ClientsScope.admin, AuditScope.read, ConnectionsScope.admin];

  beforeAll(async () => {
    t = await createTestApp({ ...NO_RATE_LIMITS, REGISTRATION: 'open' });
  });
  afterAll(() => t.close());

  it('binds clients:admin, audit:read and connections:admin to admin, and leaves them out of a default client scope', async () => {
    expect(scopeRole(ClientsScope.admin)).toBe('admin');
    expect(scopeRole(ConnectionsScope.admin)).toBe('admin');
    expect(scopeRole(AuditScope.read)).toBe('admin');
    expect(defaultClientScope().split(' ').sort()).toEqual(
      allScopes()
        .filter((s) => !adminScopes.includes(s))
        .sort(),
    );
    const plain = await registerClient(t, { trusted: true });
    expect(plain.scope.split(' ')).not.toContain(ClientsScope.admin);
    expect(plain.scope.split(' ')).not.toContain(AuditScope.read);
    const registered = await t
      .http()
      .post('/register')
      .send({ client_name: 'Agent', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body.scope.split(' ').sort()).toEqual(defaultClientScope().split(' ').sort());
  });

  it("drops them from a person's token when asked for by a trusted client, and says so in the response's scope", async () => {
    const client = await registerClient(t, { trusted: true, scope: allScopes().join(' ') });
    const issued = await issueTokens(t, { client, scope: `orders:read ${ClientsScope.admin} ${AuditScope.read}` });
    expect(issued.scope).toBe('orders:read');
    expect(decodeJwt(issued.access).payload.scope).toBe('orders:read');
    // The token cannot reach the admin API, and the refresh keeps the narrower grant.
    expect((await t.http().get('/admin/clients').set('Authorization', `Bearer ${issued.access}`)).status).toBe(403);
    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: issued.refresh });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.scope).toBe('orders:read');
  });

  it('gives them to an administrator', async () => {
    const client = await registerClient(t, { trusted: true, scope: allScopes().join(' ') });
    const admin = await t.createUser({ role: 'admin' });
    const issued = await issueTokens(t, { client, user: admin, scope: `orders:read ${ClientsScope.admin}` });
    expect(issued.scope).toBe(`orders:read ${ClientsScope.admin}`);
    expect((await t.http().get('/admin/clients').set('Authorization', `Bearer ${issued.access}`)).status).toBe(200);
  });

  it('leaves them out of a refreshed token once the person lost the role', async () => {
    const client = await registerClient(t, { trusted: true, scope: allScopes().join(' ') });
    const admin = await t.createUser({ role: 'admin' });
    const issued = await issueTokens(t, { client, user: admin, scope: `orders:read ${AuditScope.read}` });
    expect(issued.scope).toBe(`orders:read ${AuditScope.read}`);
    await t.app.get(SqlRunner).run(sql`UPDATE users SET role = 'user' WHERE id = :id`, { id: admin.id });
    const refreshed = await token(t, client, { grant_type: 'refresh_token', refresh_token: issued.refresh });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.scope).toBe('orders:read');
    expect(decodeJwt(refreshed.body.access_token).payload.scope).toBe('orders:read');
  });

  it('does not show them on the consent page, and a consent form changed to ask for them grants them not', async () => {
    const client = await registerClient(t, { scope: allScopes().join(' ') });
    const { browser } = await signedIn(t);
    const pkce = pkcePair();
    const page = await browser.get(
      authorizePath({
        response_type: 'code',
        client_id: client.client_id,
        scope: `orders:read ${AuditScope.read}`,
        state: 'st',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      }),
    );
    expect(page.status).toBe(200);
    expect(page.text).toContain('orders:read');
    expect(page.text).not.toContain(AuditScope.read);
    expect(parseForm(page.text).hidden.scope).toBe('orders:read');
    // The attack: the form posted back with the admin scope put in again.
    const allowed = await browser.submit(page, { decision: 'allow', scope: `orders:read ${AuditScope.read}` });
    const code = redirectParams(allowed).get('code')!;
    const res = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('orders:read');
    expect(decodeJwt(res.body.access_token).payload.scope).toBe('orders:read');
  });

  it('answers invalid_scope when nothing but such scopes was asked for', async () => {
    const client = await registerClient(t, { trusted: true, scope: allScopes().join(' ') });
    const { browser } = await signedIn(t);
    const res = await browser.get(
      authorizePath({
        response_type: 'code',
        client_id: client.client_id,
        scope: ClientsScope.admin,
        state: 'st',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }),
    );
    const params = redirectParams(res);
    expect(params.get('error')).toBe('invalid_scope');
    expect(params.get('state')).toBe('st');
    expect(params.get('code')).toBeNull();
  });

  it('refuses them in a token exchange for a person without the role, whatever the subject token carries', async () => {
    const agent = await registerClient(t, {
      name: 'Agent',
      trusted: true,
      grantTypes: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE_GRANT],
      scope: allScopes().join(' '),
    });
    const person = await t.createUser();
    // A subject token that claims an admin scope (minted before the rule, say): the exchange still refuses it.
    const subject = await t.token(person.id, ['orders:read', ClientsScope.admin], agent.client_id);
    expectOAuthError(
      await token(t, agent, {
        grant_type: TOKEN_EXCHANGE_GRANT,
        subject_token: subject,
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        scope: `orders:read ${ClientsScope.admin}`,
      }),
      400,
      'invalid_scope',
    );
  });
});
