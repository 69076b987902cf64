import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import {
  Browser,
  NO_RATE_LIMITS,
  authorizePath,
  backChannel,
  expectOAuthError,
  issueTokens,
  login,
  pkcePair,
  redirectParams,
  resourceStatus,
  token,
} from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';

const INITIAL_TOKEN = 'initial-access-token-0123456789abcdef';
const LOOPBACK = 'http://127.0.0.1:8765/callback';

/** The registration's answer as the fields the token helpers need. */
function asClient(body: Record<string, unknown>): ClientView {
  return {
    client_id: body.client_id as string,
    client_secret: body.client_secret as string | undefined,
    name: body.client_name as string,
    redirect_uris: body.redirect_uris as string[],
  } as ClientView;
}

function expectRegistrationError(
  res: { status: number; body: Record<string, unknown>; headers: Record<string, string> },
  status: number,
  error: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description']);
  expect(res.body.error).toBe(error);
}

describe('dynamic client registration off (the default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers 404 at /register and does not advertise it', async () => {
    const res = await t
      .http()
      .post('/register')
      .send({ redirect_uris: [LOOPBACK] });
    expect(res.status).toBe(404);
    expect((await t.http().get('/register/anything')).status).toBe(404);
    const metadata = await t.http().get('/.well-known/oauth-authorization-server');
    expect(metadata.body.registration_endpoint).toBeUndefined();
  });
});

describe('dynamic client registration (RFC 7591) and management (RFC 7592), REGISTRATION=open', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({
      ...NO_RATE_LIMITS,
      RATE_LIMIT_REGISTER: '1000',
      REGISTRATION: 'open',
      REGISTRATION_INITIAL_TOKEN: INITIAL_TOKEN,
    });
  });
  afterAll(() => t.close());

  const register = (body: unknown, initialToken?: string) => {
    const req = t.http().post('/register');
    if (initialToken) req.set('Authorization', `Bearer ${initialToken}`);
    return req.send(body as object);
  };
  const manage = (method: 'get' | 'put' | 'delete', uri: string, registrationToken?: string) => {
    const req = t.http()[method](new URL(uri).pathname);
    if (registrationToken) req.set('Authorization', `Bearer ${registrationToken}`);
    return req;
  };

  /**
   * A person signs in, sees the consent page (200) of `client` and allows; the code, sent to `redirect`, is
   * redeemed with PKCE as a public client (200).
   */
  async function consentedCodeFlow(client: ClientView, redirect: string) {
    const user = await t.createUser();
    const browser = new Browser(t);
    expect((await login(browser, user.email)).status).toBe(303);
    const pkce = pkcePair();
    const page = await browser.get(
      authorizePath({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirect,
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      }),
    );
    expect(page.status).toBe(200);
    const code = redirectParams(await browser.submit(page, { decision: 'allow' }), redirect).get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: redirect, code_verifier: pkce.verifier };
    const tokens = await token(t, client, form, 'none');
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    return { browser, page, tokens };
  }

  it('advertises registration_endpoint in the metadata', async () => {
    const metadata = await t.http().get('/.well-known/oauth-authorization-server');
    expect(metadata.body.registration_endpoint).toBe(`${t.config.issuer}/register`);
  });

  it('registers a public client with a loopback redirect URI without a token: 201 with the client information', async () => {
    const res = await register({
      client_name: 'Desktop agent',
      redirect_uris: [LOOPBACK],
      token_endpoint_auth_method: 'none',
      scope: 'orders:read',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      client_id: expect.any(String),
      client_id_issued_at: expect.any(Number),
      registration_access_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      registration_client_uri: `${t.config.issuer}/register/${res.body.client_id}`,
      client_name: 'Desktop agent',
      redirect_uris: [LOOPBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'orders:read',
      post_logout_redirect_uris: [],
    });
    expect(Math.abs(res.body.client_id_issued_at - Date.now() / 1000)).toBeLessThan(60);
  });

  it('registers post_logout_redirect_uris (RP-Initiated Logout 3.1) under the redirect URI rules, and a PUT replaces them', async () => {
    const signedOut = 'https://agent.example/signed-out';
    const res = await register({
      client_name: 'Web app',
      redirect_uris: [LOOPBACK],
      token_endpoint_auth_method: 'none',
      post_logout_redirect_uris: [signedOut, 'http://127.0.0.1:8080/bye'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.post_logout_redirect_uris).toEqual([signedOut, 'http://127.0.0.1:8080/bye']);
    // The logout endpoint takes it for this client, and nothing else: without an ID token of the client, as a link
    // on the "Signed out" page, never a redirect (the client chose it itself).
    const bye = await t
      .http()
      .get(`/end-session?${new URLSearchParams({ client_id: res.body.client_id, post_logout_redirect_uri: signedOut })}`);
    expect(bye.status).toBe(200);
    expect(bye.headers.location).toBeUndefined();
    expect(bye.text).toContain(`<a href="${signedOut}" rel="noreferrer">Continue to agent.example</a>`);

    for (const [uris, description] of [
      [['http://agent.example/bye'], 'A redirect URI must be https, or http on a loopback address.'],
      [['javascript:alert(1)'], 'A redirect URI must be https, or http on a loopback address.'],
      [['https://agent.example/bye#x'], 'A redirect URI must not have a fragment.'],
    ] as const) {
      const refused = await register({ redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', post_logout_redirect_uris: uris });
      expect(refused.status, description).toBe(400);
      expect(refused.body).toEqual({ error: 'invalid_redirect_uri', error_description: description });
    }
    const notAList = await register({ redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', post_logout_redirect_uris: [42] });
    expect(notAList.status).toBe(400);
    expect(notAList.body).toEqual({
      error: 'invalid_client_metadata',
      error_description: 'post_logout_redirect_uris must be an array of strings.',
    });

    const put = await manage('put', res.body.registration_client_uri, res.body.registration_access_token).send({
      client_id: res.body.client_id,
      redirect_uris: [LOOPBACK],
      token_endpoint_auth_method: 'none',
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.post_logout_redirect_uris).toEqual([]);
    const gone = await t
      .http()
      .get(`/end-session?${new URLSearchParams({ client_id: res.body.client_id, post_logout_redirect_uri: signedOut })}`);
    expect(gone.status).toBe(400);
    expect(gone.text).toContain('post_logout_redirect_uri is not registered for this client.');
  });

  it('a registered client is never trusted: the person sees the consent page, then the code flow with PKCE works', async () => {
    const res = await register({ client_name: 'Agent', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', trusted: true });
    const { page, tokens } = await consentedCodeFlow(asClient(res.body), LOOPBACK);
    // The name is the client's own claim, and the page says so (a client may call itself after any company).
    expect(page.text).toContain(
      '<p class="lead">This application registered itself: <strong>Agent</strong> is the name it gave, which nobody here has checked. Allow it only if you know where you came from.</p>',
    );
    expect(await resourceStatus(t, tokens.body.access_token)).toBe(200);
  });

  it('is no open redirector: an erroneous request of a self-registered client gets an error page, not a redirect to its URI', async () => {
    const reg = (
      await register({ client_name: 'Example Corp', redirect_uris: ['https://evil.example/x'], token_endpoint_auth_method: 'none' })
    ).body;
    for (const params of [
      { response_type: 'token', client_id: reg.client_id, state: '<payload>' },
      { response_type: 'code', client_id: reg.client_id, scope: 'no-such-scope' },
      { response_type: 'code', client_id: reg.client_id },
    ]) {
      const res = await new Browser(t).get(authorizePath(params));
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      // The person may still go on, by a link they choose to follow (RFC 9700 4.11.2), with state escaped.
      expect(res.text).toContain('<a href="https://evil.example/x?error=');
      expect(res.text).not.toContain('<payload>');
    }
  });

  it('lets a native client pick the port of its loopback redirect URI at each request (RFC 8252 7.3)', async () => {
    const reg = (await register({ client_name: 'CLI', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none' }))
      .body;
    const client = asClient(reg);
    const { browser } = await consentedCodeFlow(client, 'http://127.0.0.1:51234/callback');
    // Another path on the same loopback address is not registered.
    const other = await browser.get(
      authorizePath({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:51234/other' }),
    );
    expect(other.status).toBe(400);
    expect(other.headers.location).toBeUndefined();
  });

  it('ignores metadata it does not know (RFC 7591 3.1) and does not echo it', async () => {
    const res = await register({
      redirect_uris: [LOOPBACK],
      token_endpoint_auth_method: 'none',
      logo_uri: 'https://x/logo.png',
      foo: { bar: 1 },
    });
    expect(res.status).toBe(201);
    expect(res.body.logo_uri).toBeUndefined();
    expect(res.body.foo).toBeUndefined();
    expect(res.body.client_name).toBe('Unnamed client');
  });

  it.each([
    ['javascript:', 'javascript:alert(document.cookie)'],
    ['data:', 'data:text/html,<script>alert(1)</script>'],
    ['non-loopback http', 'http://evil.example.com/cb'],
    ['http on a private address', 'http://10.0.0.7/cb'],
    ['a fragment', 'https://app.example.com/cb#x'],
    ['credentials', 'https://user:pw@app.example.com/cb'],
    ['a relative URI', '/cb'],
    ['a space', 'https://app.example.com/c b'],
  ])('refuses a redirect URI with %s: 400 invalid_redirect_uri, nothing registered', async (_, uri) => {
    expectRegistrationError(
      await register({ redirect_uris: [LOOPBACK, uri], token_endpoint_auth_method: 'none' }),
      400,
      'invalid_redirect_uri',
    );
  });

  it('refuses a missing redirect URI for the code grant (invalid_redirect_uri)', async () => {
    expectRegistrationError(await register({ token_endpoint_auth_method: 'none' }), 400, 'invalid_redirect_uri');
  });

  it.each([
    ['a confidential client without the initial token', { redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'client_secret_basic' }],
    ['a confidential client by default (RFC 7591: client_secret_basic) without the initial token', { redirect_uris: [LOOPBACK] }],
    ['an unknown auth method', { redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'private_key_jwt' }],
    ['an unknown grant', { redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', grant_types: ['password'] }],
    ['client_credentials for a public client', { token_endpoint_auth_method: 'none', grant_types: ['client_credentials'] }],
    ['an implicit response type', { redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', response_types: ['token'] }],
    ['an unknown scope', { redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', scope: 'admin:everything' }],
    ['a two-line name', { redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none', client_name: 'Bank\nLogin' }],
    ['redirect_uris that is not a list', { redirect_uris: LOOPBACK, token_endpoint_auth_method: 'none' }],
    ['a body that is a list', [LOOPBACK]],
  ])('refuses %s: 400 invalid_client_metadata', async (_, body) => {
    expectRegistrationError(await register(body), 400, 'invalid_client_metadata');
  });

  it('refuses malformed JSON and a body that is not JSON with invalid_client_metadata', async () => {
    const bad = await t.http().post('/register').set('Content-Type', 'application/json').send('{"redirect_uris": [');
    expectRegistrationError(bad, 400, 'invalid_client_metadata');
    const form = await t
      .http()
      .post('/register')
      .type('form')
      .send(`redirect_uris=${encodeURIComponent(LOOPBACK)}`);
    expectRegistrationError(form, 400, 'invalid_client_metadata');
  });

  it('refuses a wrong initial access token (401 invalid_token) instead of falling back to open registration', async () => {
    const res = await register({ redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' }, 'not-the-initial-token');
    expectRegistrationError(res, 401, 'invalid_token');
    expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
  });

  it('with the initial access token registers a confidential client, whose secret is shown once and whose method is enforced', async () => {
    const res = await register(
      { client_name: 'Reporting', redirect_uris: ['https://reports.example.com/cb'], token_endpoint_auth_method: 'client_secret_post' },
      INITIAL_TOKEN,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.body.client_secret_expires_at).toBe(0);
    const client = asClient(res.body);
    // Its registered method works; the other secret method is refused.
    expect((await backChannel(t, '/introspect', client, { token: 'x' }, 'post')).status).toBe(200);
    expectOAuthError(await backChannel(t, '/introspect', client, { token: 'x' }, 'basic'), 401, 'invalid_client');
    // Read back later, the secret is not there: only its hash is stored.
    const read = await manage('get', res.body.registration_client_uri, res.body.registration_access_token);
    expect(read.status).toBe(200);
    expect(read.body.client_secret).toBeUndefined();
    expect(read.body.token_endpoint_auth_method).toBe('client_secret_post');
  });

  it('never registers client_credentials, not even with the initial access token: only an operator gives a service its own access', async () => {
    const res = await register(
      {
        redirect_uris: ['https://reports.example.com/cb'],
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      INITIAL_TOKEN,
    );
    expectRegistrationError(res, 400, 'invalid_client_metadata');
  });

  describe('RFC 7592 with the registration access token', () => {
    it("reads the registration; another client's token, none, or a malformed header is 401 invalid_token", async () => {
      const a = (await register({ client_name: 'A', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' })).body;
      const b = (await register({ client_name: 'B', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' })).body;
      const read = await manage('get', a.registration_client_uri, a.registration_access_token);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(a);
      for (const bearer of [b.registration_access_token, undefined, INITIAL_TOKEN]) {
        expectRegistrationError(await manage('get', a.registration_client_uri, bearer), 401, 'invalid_token');
      }
      expectRegistrationError(
        await t.http().get(new URL(a.registration_client_uri).pathname).set('Authorization', 'Basic abc'),
        401,
        'invalid_token',
      );
      // An operator's client has no registration token: nobody manages it through here.
      expectRegistrationError(
        await manage('get', `${t.config.issuer}/register/no-such-client`, a.registration_access_token),
        401,
        'invalid_token',
      );
    });

    it('replaces the registration (PUT): the old redirect URI stops working, the new one works', async () => {
      const reg = (await register({ client_name: 'Old', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' })).body;
      const next = 'http://127.0.0.1:9999/new';
      const res = await manage('put', reg.registration_client_uri, reg.registration_access_token).send({
        client_id: reg.client_id,
        client_name: 'New',
        redirect_uris: [next],
        token_endpoint_auth_method: 'none',
        scope: 'users:read',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ client_id: reg.client_id, client_name: 'New', redirect_uris: [next], scope: 'users:read' });
      const browser = new Browser(t);
      const old = await browser.get(authorizePath({ response_type: 'code', client_id: reg.client_id, redirect_uri: LOOPBACK }));
      expect(old.status).toBe(400);
      expect(old.headers.location).toBeUndefined();
    });

    it('refuses a PUT for another client_id, a wrong secret, a change of auth method, or a javascript: redirect URI', async () => {
      const reg = (await register({ redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' })).body;
      const put = (body: object) => manage('put', reg.registration_client_uri, reg.registration_access_token).send(body);
      expectRegistrationError(
        await put({ client_id: 'other', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' }),
        400,
        'invalid_client_metadata',
      );
      expectRegistrationError(
        await put({ client_id: reg.client_id, client_secret: 'x', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' }),
        400,
        'invalid_client_metadata',
      );
      expectRegistrationError(
        await put({ client_id: reg.client_id, redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'client_secret_basic' }),
        400,
        'invalid_client_metadata',
      );
      expectRegistrationError(
        await put({ client_id: reg.client_id, redirect_uris: ['javascript:alert(1)'], token_endpoint_auth_method: 'none' }),
        400,
        'invalid_redirect_uri',
      );
      // Unchanged.
      expect((await manage('get', reg.registration_client_uri, reg.registration_access_token)).body.redirect_uris).toEqual([LOOPBACK]);
    });

    it('deletes the client (204): its registration token, refresh tokens and access tokens stop working', async () => {
      const reg = (await register({ client_name: 'Short-lived', redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' })).body;
      const client = asClient(reg);
      // The registered client is never trusted, so issueTokens allows on the consent page.
      const { access, refresh } = await issueTokens(t, { client: { ...client, redirect_uris: [LOOPBACK] } });
      const res = await manage('delete', reg.registration_client_uri, reg.registration_access_token);
      expect(res.status).toBe(204);
      expectRegistrationError(await manage('get', reg.registration_client_uri, reg.registration_access_token), 401, 'invalid_token');
      expect(await resourceStatus(t, access)).toBe(401);
      expectOAuthError(await token(t, client, { grant_type: 'refresh_token', refresh_token: refresh }, 'none'), 401, 'invalid_client');
    });
  });
});

describe('REGISTRATION=token', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ REGISTRATION: 'token', REGISTRATION_INITIAL_TOKEN: INITIAL_TOKEN, RATE_LIMIT_REGISTER: '3' });
  });
  afterAll(() => t.close());

  it('refuses registration without the initial access token, even for a public client', async () => {
    const res = await t
      .http()
      .post('/register')
      .send({ redirect_uris: [LOOPBACK], token_endpoint_auth_method: 'none' });
    expectRegistrationError(res, 401, 'invalid_token');
  });

  it('is rate-limited per address (RATE_LIMIT_REGISTER)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push(
        (
          await t
            .http()
            .post('/register')
            .set('Authorization', `Bearer ${INITIAL_TOKEN}`)
            .send({ redirect_uris: [LOOPBACK] })
        ).status,
      );
    }
    // The first test used one of the three.
    expect(statuses).toEqual([201, 201, 429]);
  });
});
