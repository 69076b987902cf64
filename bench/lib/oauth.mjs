// A minimal browser + OAuth client for the code flow with PKCE S256, on node:http with keep-alive connections (it
// never follows redirects). Every function checks the answer and throws on anything unexpected, so a failed flow is
// never counted as done.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';

const REQUEST_TIMEOUT_MS = 15_000;
const SCOPE = 'users:read users:write orders:read orders:write';

const b64url = (buf) => buf.toString('base64url');

export function pkce() {
  const verifier = b64url(randomBytes(32));
  return { verifier, challenge: b64url(createHash('sha256').update(verifier).digest()) };
}

/** Cookies of one browser (name -> value); only what this service sets. */
export class CookieJar {
  #cookies = new Map();

  store(res) {
    for (const header of res.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }

  get(name) {
    return this.#cookies.get(name);
  }

  header() {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export class FlowError extends Error {}

/**
 * The headers Node's fetch sends with every request, sent here too so that the servers see the requests they saw
 * when the driver used fetch. fetch cost the load generator 0.72-0.93 ms of CPU per code flow (a) against 0.30-0.32
 * ms on node:http, enough to leave the server under test idle 13 % of the time with ten loops.
 */
const FETCH_HEADERS = {
  accept: '*/*',
  'accept-language': '*',
  'sec-fetch-mode': 'cors',
  'user-agent': 'node',
  'accept-encoding': 'gzip, deflate',
};

/** The part of fetch's Response the clients use: status, headers.get / getSetCookie, text(), arrayBuffer(). */
class HttpResponse {
  constructor(status, headers, body) {
    this.status = status;
    this.body = body;
    this.headers = {
      get: (name) => {
        const value = headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
      getSetCookie: () => headers['set-cookie'] ?? [],
    };
  }

  async text() {
    return this.body.toString('utf8');
  }

  async arrayBuffer() {
    return this.body.buffer.slice(this.body.byteOffset, this.body.byteOffset + this.body.byteLength);
  }
}

const agent = new http.Agent({ keepAlive: true });

/** One HTTP request over a kept-alive connection; rejects when no byte moved for `timeoutMs`. */
function httpRequest(url, { method = 'GET', headers = {}, body }, timeoutMs) {
  return new Promise((resolve, reject) => {
    // The caller's headers first, then fetch's defaults for those it did not set, as fetch orders them.
    const all = { ...headers };
    for (const [key, value] of Object.entries(FETCH_HEADERS)) if (!(key in all)) all[key] = value;
    if (body !== undefined) all['content-length'] = Buffer.byteLength(body);
    const req = http.request(url, { method, headers: all, agent, timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve(new HttpResponse(res.statusCode, res.headers, Buffer.concat(chunks))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new FlowError(`${method} ${url.pathname}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

export function expectStatus(res, expected, step) {
  if (!expected.includes(res.status)) throw new FlowError(`${step}: HTTP ${res.status}, expected ${expected.join('/')}`);
}

const unescapeHtml = (s) => s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]);

function hiddenField(html, name) {
  const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(html);
  return match ? unescapeHtml(match[1]) : undefined;
}

/** A client of one running service: its issuer and the demo client's credentials. */
export class OAuthClient {
  constructor({
    issuer,
    clientId,
    clientSecret,
    redirectUri = `${issuer}/demo/callback`,
    scope = SCOPE,
    authorizationPath = '/authorize',
    dpop,
  }) {
    this.issuer = issuer;
    // A DpopKey (bench/lib/dpop.mjs): every token request carries a proof of it, and its tokens are DPoP-bound.
    this.dpop = dpop;
    this.authorizationPath = authorizationPath;
    this.clientId = clientId;
    this.redirectUri = redirectUri;
    this.scope = scope;
    this.basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
  }

  /** One request to the server, never following redirects; bounded by a timeout. */
  async request(path, init = {}) {
    return httpRequest(new URL(path, this.issuer), init, REQUEST_TIMEOUT_MS);
  }

  /** A fresh authorization request: its relative URL and the PKCE verifier / state to check the answer with. */
  newRequest() {
    const { verifier, challenge } = pkce();
    const state = b64url(randomBytes(12));
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: this.clientId,
      redirect_uri: this.redirectUri,
      scope: this.scope,
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    return { path: `${this.authorizationPath}?${query}`, verifier, state };
  }

  /**
   * GET /authorize. Returns `{ code }` when it redirected to the client, or `{ login }` (the /login URL) when the
   * browser has no session.
   */
  async authorize(jar, requestPath, state) {
    const res = await this.request(requestPath, { headers: { cookie: jar.header() } });
    await res.arrayBuffer();
    expectStatus(res, [302], 'GET /authorize');
    const location = new URL(res.headers.get('location'), this.issuer);
    if (location.pathname === '/login') return { login: location.pathname + location.search };
    if (`${location.origin}${location.pathname}` !== this.redirectUri) throw new FlowError(`GET /authorize: redirected to ${location}`);
    const code = location.searchParams.get('code');
    if (!code) throw new FlowError(`GET /authorize: no code (${location.searchParams.get('error')})`);
    if (location.searchParams.get('state') !== state) throw new FlowError('GET /authorize: state mismatch');
    if (location.searchParams.get('iss') !== this.issuer) throw new FlowError('GET /authorize: iss mismatch');
    return { code };
  }

  /** GET /login: the form's csrf and return_to, and the login_csrf cookie into the jar. */
  async loginForm(jar, loginPath) {
    const res = await this.request(loginPath, { headers: { cookie: jar.header() } });
    const html = await res.text();
    expectStatus(res, [200], 'GET /login');
    jar.store(res);
    const csrf = hiddenField(html, 'csrf');
    const returnTo = hiddenField(html, 'return_to');
    if (!csrf || returnTo === undefined || !jar.get('login_csrf')) throw new FlowError('GET /login: no csrf field or cookie');
    return { csrf, returnTo };
  }

  /** POST /login: returns where it sent the browser (return_to); the session cookie goes into the jar. */
  async login(jar, { csrf, returnTo }, email, password) {
    const res = await this.request('/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() },
      body: new URLSearchParams({ email, password, csrf, return_to: returnTo }).toString(),
    });
    await res.arrayBuffer();
    expectStatus(res, [302, 303], 'POST /login');
    jar.store(res);
    if (!jar.get('oauth_session')) throw new FlowError('POST /login: no session cookie');
    return res.headers.get('location');
  }

  async #token(form, step) {
    const res = await this.request('/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: this.basic,
        ...(this.dpop ? { dpop: this.dpop.proof('POST', `${this.issuer}/token`) } : {}),
      },
      body: new URLSearchParams(form).toString(),
    });
    const text = await res.text();
    expectStatus(res, [200], `${step} (${text.slice(0, 200)})`);
    const body = JSON.parse(text);
    const tokenType = this.dpop ? /^dpop$/i : /^bearer$/i;
    if (!body.access_token || !body.refresh_token || !tokenType.test(body.token_type)) throw new FlowError(`${step}: incomplete answer`);
    return body;
  }

  exchangeCode(code, verifier) {
    return this.#token(
      { grant_type: 'authorization_code', code, redirect_uri: this.redirectUri, code_verifier: verifier },
      'POST /token (code)',
    );
  }

  refresh(refreshToken) {
    return this.#token({ grant_type: 'refresh_token', refresh_token: refreshToken }, 'POST /token (refresh)');
  }

  /** A browser with a login session (GET /login, POST /login). */
  async loggedInJar(email, password) {
    const jar = new CookieJar();
    const form = await this.loginForm(jar, '/login?return_to=%2F');
    await this.login(jar, form, email, password);
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
