// Peer for the OAuth flow benchmark: oidc-provider 9 (the library a team would pick instead of the service),
// configured as close as it allows to the service's trusted demo client: code flow with PKCE S256 required,
// client_secret_basic, RS256 JWT access tokens for one resource, refresh tokens on every code grant, rotated on use,
// a first-party client (no consent page) and a plain login form for one fixed user. In-memory adapter (the default).
//
//   cd bench && npm install          (once: installs oidc-provider into bench/node_modules)
//   PORT=4100 node bench/peer/oidc-provider-server.mjs
//
// Env:  PORT (default 4100); CLIENT_ID, CLIENT_SECRET, USER_EMAIL, USER_PASSWORD (defaults below).
// Binds 127.0.0.1 only; issuer http://127.0.0.1:<PORT>; audience of the access tokens http://127.0.0.1:<PORT>/api.
// Prints one JSON line once listening:
//   {"ready":true,"issuer":...,"clientId":...,"clientSecret":...,"redirectUri":...,"audience":...,"scope":...,
//    "email":...,"password":...,"pid":...}
// Logs nothing per request. SIGTERM/SIGINT: stops listening and exits 0.
import { generateKeyPairSync, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const HOST = '127.0.0.1';
const PORT = Number(process.env.PORT || 4100);
const ISSUER = `http://${HOST}:${PORT}`;
const AUDIENCE = `${ISSUER}/api`;
const REDIRECT_URI = `${ISSUER}/cb`;
const SCOPE = 'users:read users:write orders:read orders:write';
const CLIENT_ID = process.env.CLIENT_ID || 'bench-peer-client';
const CLIENT_SECRET = process.env.CLIENT_SECRET || 'bench-peer-secret-0123456789abcdefghijklmnopqrstuv';
const USER = {
  id: 'user-1',
  email: process.env.USER_EMAIL || 'admin@example.com',
  password: process.env.USER_PASSWORD || 'bench-password-1',
};
// Same lifetimes as the service's defaults (ACCESS_TOKEN_TTL, REFRESH_TOKEN_TTL, AUTH_CODE_TTL, SESSION_TTL).
const TTL = { accessToken: 900, refreshToken: 2_592_000, code: 60, session: 28_800 };

// RS256 signing key, new at every start.
const signingKey = {
  ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: randomBytes(8).toString('base64url'),
  use: 'sig',
  alg: 'RS256',
};

// Password check: constant-time comparison of SHA-256 digests of the submitted and the configured password
// (no password hashing function: the peer's login is therefore much cheaper than the service's argon2id).
const passwordDigest = createHash('sha256').update(USER.password).digest();
const passwordMatches = (candidate) => timingSafeEqual(createHash('sha256').update(String(candidate)).digest(), passwordDigest);

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    revocation: { enabled: true },
    introspection: { enabled: true },
    // Access tokens are RS256 JWTs (typ at+jwt) for the one resource server, which is the default resource.
    resourceIndicators: {
      enabled: true,
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resourceIndicator) => {
        if (resourceIndicator !== AUDIENCE) throw new errors.InvalidTarget();
        return {
          scope: SCOPE,
          audience: AUDIENCE,
          accessTokenTTL: TTL.accessToken,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  // A refresh token for every code grant, rotated on every use, not bound to the browser session.
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: () => true,
  expiresWithSession: () => false,
  // First-party client: the login grants what it asks for (within SCOPE), so no consent prompt is ever shown.
  loadExistingGrant: async (ctx) => {
    const { client, session } = ctx.oidc;
    const grantId = ctx.oidc.result?.consent?.grantId || session.grantIdFor(client.clientId);
    if (grantId) {
      const grant = await ctx.oidc.provider.Grant.find(grantId);
      if (grant) return grant;
    }
    const allowed = new Set(SCOPE.split(' '));
    const requested = (ctx.oidc.params.scope ?? '').split(' ').filter((s) => allowed.has(s));
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addResourceScope(AUDIENCE, requested.join(' '));
    await grant.save();
    return grant;
  },
  findAccount: (_ctx, sub) => (sub === USER.id ? { accountId: sub, claims: () => ({ sub, email: USER.email }) } : undefined),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: {
    AccessToken: TTL.accessToken,
    AuthorizationCode: TTL.code,
    RefreshToken: TTL.refreshToken,
    Session: TTL.session,
    Grant: TTL.session,
    Interaction: 600,
    IdToken: TTL.accessToken,
  },
  // Plain error page (the default one logs a notice to replace it).
  renderError: (ctx, out) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = `${out.error}: ${out.error_description ?? ''}\n`;
  },
});

const escapeHtml = (s) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function loginPage(res, uid, status = 200, message = '') {
  const body = `<!doctype html>
<html><head><meta charset="utf-8"><title>Sign in</title></head><body>
${message ? `<p>${escapeHtml(message)}</p>` : ''}<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<input type="email" name="email" required autofocus>
<input type="password" name="password" required>
<button type="submit">Sign in</button>
</form></body></html>`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

function plain(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readForm(req, limit = 16 * 1024) {
  let size = 0;
  const chunks = [];
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw Object.assign(new Error('body too large'), { status: 413 });
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

// GET /interaction/:uid shows the login form; POST /interaction/:uid/login checks it and resumes the authorization
// (303 to /auth/:uid). The interaction is bound to the browser by oidc-provider's signed, path-scoped cookie.
async function interaction(req, res) {
  const { pathname } = new URL(req.url, ISSUER);
  const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(pathname);
  if (!match) return plain(res, 404, 'not found\n');
  const [, uid, login] = match;
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch {
    return plain(res, 400, 'interaction expired or not found\n');
  }
  if (details.uid !== uid) return plain(res, 400, 'interaction mismatch\n');
  if (details.prompt.name !== 'login') return plain(res, 500, `unexpected prompt ${details.prompt.name}\n`);
  if (!login && req.method === 'GET') return loginPage(res, uid);
  if (!login || req.method !== 'POST') return plain(res, 405, 'method not allowed\n');
  const form = await readForm(req);
  if (form.get('email')?.toLowerCase() !== USER.email.toLowerCase() || !passwordMatches(form.get('password') ?? '')) {
    return loginPage(res, uid, 401, 'Invalid email or password.');
  }
  return provider.interactionFinished(req, res, { login: { accountId: USER.id } }, { mergeWithLastSubmission: false });
}

const handleProvider = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((error) => {
      if (!res.headersSent) plain(res, error.status ?? 500, 'interaction failed\n');
      else res.destroy();
    });
  } else {
    handleProvider(req, res);
  }
});
server.keepAliveTimeout = 65_000;

server.listen(PORT, HOST, () => {
  process.stdout.write(
    `${JSON.stringify({
      ready: true,
      issuer: ISSUER,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: REDIRECT_URI,
      audience: AUDIENCE,
      scope: SCOPE,
      email: USER.email,
      password: USER.password,
      pid: process.pid,
    })}\n`,
  );
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  // Do not hang on a connection that stays busy.
  setTimeout(() => process.exit(0), 2000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
