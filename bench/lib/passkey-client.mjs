// Passkey sign-in as a browser does it, for the sign-in scenario: the software authenticator of the e2e suite
// (test/support/passkey-authenticator.mts, loaded through Node's type stripping) answers the service's challenges.
import { SoftAuthenticator } from '../../test/support/passkey-authenticator.mts';
import { CookieJar, FlowError, expectStatus } from './oauth.mjs';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

function hidden(html, name) {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(html);
  if (!match) throw new FlowError(`no ${name} field`);
  return match[1];
}

/** Registers a passkey for the person signed in in `jar` (the account page, as a browser does). */
export async function registerPasskey(client, jar) {
  const authenticator = new SoftAuthenticator();
  const page = await client.request('/account/security', { headers: { cookie: jar.header() } });
  const html = await page.text();
  expectStatus(page, [200], 'GET /account/security');
  const csrf = hidden(html, 'csrf');
  const options = await client.request('/account/security/passkeys/options', {
    method: 'POST',
    headers: { ...JSON_HEADERS, cookie: jar.header() },
    body: JSON.stringify({ csrf }),
  });
  const optionsJson = JSON.parse(await options.text());
  expectStatus(options, [200], 'POST /account/security/passkeys/options');
  jar.store(options);
  const answer = authenticator.register(optionsJson, { origin: new URL(client.issuer).origin });
  const added = await client.request('/account/security/passkeys', {
    method: 'POST',
    headers: { ...FORM, cookie: jar.header() },
    body: new URLSearchParams({ csrf, step: 'register', name: 'Bench', response: JSON.stringify(answer) }).toString(),
  });
  await added.arrayBuffer();
  expectStatus(added, [303], 'POST /account/security/passkeys');
  return authenticator;
}

/**
 * One passkey sign-in in a fresh browser: GET /login, POST /login/passkey/options, the authenticator's assertion,
 * POST /login/passkey. `step(name, fn)` times each request. Returns the browser's jar, with the session.
 */
export async function passkeySignIn(client, authenticator, step) {
  const jar = new CookieJar();
  const { csrf } = await client.loginForm(jar, '/login?return_to=%2F');
  const options = await step('POST /login/passkey/options', async () => {
    const res = await client.request('/login/passkey/options', {
      method: 'POST',
      headers: { ...JSON_HEADERS, cookie: jar.header() },
      body: JSON.stringify({ csrf, step: 'sign-in' }),
    });
    const text = await res.text();
    expectStatus(res, [200], 'POST /login/passkey/options');
    jar.store(res);
    return JSON.parse(text);
  });
  const answer = authenticator.authenticate(options, { origin: new URL(client.issuer).origin });
  await step('POST /login/passkey', async () => {
    const res = await client.request('/login/passkey', {
      method: 'POST',
      headers: { ...FORM, cookie: jar.header() },
      body: new URLSearchParams({ csrf, step: 'sign-in', return_to: '/', response: JSON.stringify(answer) }).toString(),
    });
    await res.arrayBuffer();
    expectStatus(res, [303], 'POST /login/passkey');
    jar.store(res);
    if (!jar.get('oauth_session')) throw new FlowError('POST /login/passkey: no session cookie');
  });
  return jar;
}
