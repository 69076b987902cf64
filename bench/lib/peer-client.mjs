// The flow driver's client for the oidc-provider peer (bench/peer/oidc-provider-server.mjs): the same methods and
// checks as OAuthClient in oauth.mjs, so that sessionFlow, sessionRefreshFlow and freshBrowserFlow (flows.mjs) run
// unchanged against it. Differences of the provider it absorbs:
//   - the authorization endpoint is /auth and answers 303 (the service: /authorize, 302);
//   - a browser without a session is sent to /interaction/<uid> (the login form), and the login resumes the request
//     at /auth/<uid> (not at the original /auth?... URL). The adapter remembers, per cookie jar, which request a
//     login belongs to: login() returns that request's path, as the service's POST /login does with return_to, and
//     the next authorize() of that path goes to /auth/<uid> instead, so step 'GET /authorize' after a login times
//     the provider's resume request;
//   - the session cookie (_session) is set by that resume, not by the login POST;
//   - cookies are signed (<name>.sig) and path-scoped, and cleared with an expiry in the past: expired cookies are
//     removed from the jar; the path is ignored (the provider ignores cookies it does not expect).
// Like OAuthClient, every method checks the answer (status, state, iss, tokens) and throws on anything unexpected.
import { CookieJar, FlowError, OAuthClient, expectStatus } from './oauth.mjs';

const REDIRECT_STATUSES = [302, 303];

/** Stores the response's cookies in the jar; a cookie cleared with an expiry in the past is removed from it. */
function storeCookies(jar, res) {
  const now = Date.now();
  const headers = res.headers.getSetCookie().map((header) => {
    const expires = /;\s*expires=([^;]+)/i.exec(header);
    if (!expires || Date.parse(expires[1]) > now) return header;
    return `${header.slice(0, header.indexOf('='))}=; Max-Age=0`;
  });
  if (headers.length) jar.store({ headers: { getSetCookie: () => headers } });
}

/** Removes cookies from the jar (by name). */
function forgetCookies(jar, names) {
  jar.store({ headers: { getSetCookie: () => names.map((name) => `${name}=; Max-Age=0`) } });
}

/**
 * A client of one running oidc-provider peer: its issuer and the client's credentials (from its ready line). The
 * token endpoint is the same as the service's, so exchangeCode() and refresh() are OAuthClient's.
 */
export class PeerOAuthClient extends OAuthClient {
  /** Per jar: the authorization request waiting for a login ({ requestPath, interactionPath, resumePath }). */
  #pending = new WeakMap();

  constructor({ issuer, redirectUri = `${issuer}/cb`, ...rest }) {
    super({ issuer, redirectUri, authorizationPath: '/auth', ...rest });
  }

  /**
   * GET /auth (or, right after a login for this request, GET /auth/<uid>). Returns `{ code }` when it redirected
   * to the client, or `{ login }` (the /interaction/<uid> URL) when the browser has no session.
   */
  async authorize(jar, requestPath, state) {
    let path = requestPath;
    const pending = this.#pending.get(jar);
    if (pending?.resumePath && pending.requestPath === requestPath) {
      path = pending.resumePath;
      this.#pending.delete(jar);
    }
    const res = await this.request(path, { headers: { cookie: jar.header() } });
    await res.arrayBuffer();
    expectStatus(res, REDIRECT_STATUSES, 'GET /authorize');
    storeCookies(jar, res);
    const location = new URL(res.headers.get('location'), this.issuer);
    if (location.origin === this.issuer && location.pathname.startsWith('/interaction/')) {
      this.#pending.set(jar, { requestPath, interactionPath: location.pathname });
      return { login: location.pathname };
    }
    if (`${location.origin}${location.pathname}` !== this.redirectUri) throw new FlowError(`GET /authorize: redirected to ${location}`);
    const code = location.searchParams.get('code');
    if (!code) throw new FlowError(`GET /authorize: no code (${location.searchParams.get('error')})`);
    if (location.searchParams.get('state') !== state) throw new FlowError('GET /authorize: state mismatch');
    if (location.searchParams.get('iss') !== this.issuer) throw new FlowError('GET /authorize: iss mismatch');
    return { code };
  }

  /** GET /interaction/<uid>: the login form's action; the interaction cookie must be in the jar. */
  async loginForm(jar, loginPath) {
    const res = await this.request(loginPath, { headers: { cookie: jar.header() } });
    const html = await res.text();
    expectStatus(res, [200], 'GET /login');
    storeCookies(jar, res);
    const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
    if (!action || !action.startsWith(`${loginPath}/`) || !jar.get('_interaction'))
      throw new FlowError('GET /login: no form or no interaction cookie');
    return { action, loginPath };
  }

  /**
   * POST /interaction/<uid>/login: checks that the provider resumes the authorization (303 to /auth/<uid>) and
   * returns the path of the authorization request the login was for (like return_to), or the resume path when the
   * login did not start from authorize() with this jar.
   */
  async login(jar, { action, loginPath }, email, password) {
    const res = await this.request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() },
      body: new URLSearchParams({ email, password }).toString(),
    });
    await res.arrayBuffer();
    expectStatus(res, [303], 'POST /login');
    storeCookies(jar, res);
    const location = new URL(res.headers.get('location'), this.issuer);
    const uid = loginPath.slice('/interaction/'.length);
    if (location.origin !== this.issuer || location.pathname !== `/auth/${uid}`) throw new FlowError(`POST /login: went to ${location}`);
    const pending = this.#pending.get(jar);
    if (pending?.interactionPath !== loginPath) return location.pathname;
    pending.resumePath = location.pathname;
    return pending.requestPath;
  }

  /**
   * A browser with a login session. The provider has no stand-alone login: one authorization request with a login
   * (GET /auth, GET + POST /interaction/<uid>, GET /auth/<uid>); its code is left unused.
   */
  async loggedInJar(email, password) {
    const jar = new CookieJar();
    const request = this.newRequest();
    const first = await this.authorize(jar, request.path, request.state);
    if (!first.login) throw new FlowError('GET /authorize: did not ask to log in');
    const form = await this.loginForm(jar, first.login);
    const returnTo = await this.login(jar, form, email, password);
    const { code } = await this.authorize(jar, returnTo, request.state);
    if (!code || !jar.get('_session')) throw new FlowError('GET /authorize: no session after login');
    // A browser sends the interaction cookies (path /interaction/<uid>) to that path only: drop them.
    forgetCookies(jar, ['_interaction', '_interaction.sig', '_interaction_resume', '_interaction_resume.sig']);
    return jar;
  }

  /** One whole code flow for a logged-in browser; returns the token response. */
  async tokens(jar) {
    const request = this.newRequest();
    const { code } = await this.authorize(jar, request.path, request.state);
    if (!code) throw new FlowError('GET /authorize: asked to log in');
    return this.exchangeCode(code, request.verifier);
  }
}
