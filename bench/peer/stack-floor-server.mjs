// The floor of the service's stack for the code flow (a) and `GET /api/resource`: a NestJS 12 app on the same
// packages as the service (@nestjs/platform-express with the service's adapter, helmet's defaults, a pino access line
// and a prom-client histogram per request, a request id, @nestjs/throttler on /token, @nestjs/jwt RS256 access
// tokens, @nestjs/passport's AuthGuard('bearer') with passport-http-bearer and an lru-cache of verified tokens,
// node-postgres in pipeline mode) doing the least the flow needs: one statement per request (a code for the session's
// user; the code consumed with its refresh token), no validation beyond the client, redirect URI and PKCE, no audit
// event, no consent, no foreign keys. What the service spends beyond it is its own. Plain ESM: decorators by hand.
//
//   PORT=4300 DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_x ISSUER=http://127.0.0.1:4300 \
//     SERVICE_DIST=dist/src node bench/peer/stack-floor-server.mjs
//
// SERVICE_DIST: the service's built sources, for its HTTP adapter (common/express-adapter.js) and its in-memory
// throttler storage (rate-limit/memory-throttler.storage.js; the throttler's default storage filters a list
// of hit times per request, 0.09 ms per flow).
//
// Prints one JSON line once listening: {"ready":true,"issuer":...,"clientId":...,"clientSecret":...,"pid":...}.
// Its routes answer the bench's OAuth client (bench/lib/oauth.mjs): GET/POST /login (no password check: a session
// for the one user), GET /authorize, POST /token (authorization_code), GET /api/resource.
import 'reflect-metadata';
import { createHash, generateKeyPairSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  BadRequestException,
  Controller,
  Get,
  Header,
  HttpCode,
  Module,
  Post,
  Req,
  Res,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JwtService } from '@nestjs/jwt';
import { AuthGuard, PassportStrategy } from '@nestjs/passport';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import helmet from 'helmet';
import { LRUCache } from 'lru-cache';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import pg from 'pg';
import pino from 'pino';
import { Histogram, Registry } from 'prom-client';

const HOST = '127.0.0.1';
const PORT = Number(process.env.PORT || 4300);
const ISSUER = process.env.ISSUER || `http://${HOST}:${PORT}`;
const DATABASE_URL = process.env.DATABASE_URL;
const SERVICE_DIST = process.env.SERVICE_DIST;
if (!DATABASE_URL || !SERVICE_DIST) throw new Error('DATABASE_URL and SERVICE_DIST are required');
const { MemoryThrottlerStorage } = (await import(`${SERVICE_DIST}/rate-limit/memory-throttler.storage.js`)).default;
const SCOPES = new Set(['users:read', 'users:write', 'orders:read', 'orders:write']);
const CLIENT = { id: 'floor-client', secret: randomBytes(24).toString('base64url'), redirectUri: `${ISSUER}/demo/callback` };
const CLIENT_SECRET_HASH = createHash('sha256').update(CLIENT.secret).digest();
const USER_ID = randomUUID();
const sha256 = (s) => createHash('sha256').update(s).digest('base64url');

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const KID = sha256(publicKey.export({ type: 'spki', format: 'der' }));
const jwt = new JwtService({ privateKey, publicKey, signOptions: { algorithm: 'RS256', keyid: KID } });

// Two pipelined connections, as the service's: codes committed asynchronously, redemptions synchronously.
const issuing = new pg.Client({ connectionString: DATABASE_URL, pipeline: true, options: '-c synchronous_commit=off' });
const redeeming = new pg.Client({ connectionString: DATABASE_URL, pipeline: true });
await issuing.connect();
await redeeming.connect();
await issuing.query(
  `CREATE TABLE IF NOT EXISTS floor_sessions (id text PRIMARY KEY, user_id uuid NOT NULL, expires_at timestamptz NOT NULL)`,
);
await issuing.query(`CREATE TABLE IF NOT EXISTS floor_codes (hash text PRIMARY KEY, user_id uuid NOT NULL, client_id text NOT NULL,
  scope text NOT NULL, redirect_uri text NOT NULL, challenge text NOT NULL, expires_at timestamptz NOT NULL, consumed_at timestamptz)`);
await issuing.query(`CREATE TABLE IF NOT EXISTS floor_refresh_tokens (hash text PRIMARY KEY, user_id uuid NOT NULL, client_id text NOT NULL,
  scope text NOT NULL, expires_at timestamptz NOT NULL)`);
const ISSUE = `INSERT INTO floor_codes (hash, user_id, client_id, scope, redirect_uri, challenge, expires_at)
  SELECT $1, s.user_id, $3, $4, $5, $6, now() + interval '60 seconds' FROM floor_sessions s WHERE s.id = $2 AND s.expires_at > now()
  RETURNING user_id`;
const REDEEM = `WITH c AS (UPDATE floor_codes SET consumed_at = now() WHERE hash = $1 AND client_id = $2 AND consumed_at IS NULL
    AND expires_at > now() RETURNING user_id, scope, redirect_uri, challenge),
  r AS (INSERT INTO floor_refresh_tokens (hash, user_id, client_id, scope, expires_at)
    SELECT $3, user_id, $2, scope, now() + interval '30 days' FROM c WHERE redirect_uri = $4 AND challenge = $5)
  SELECT user_id, scope, redirect_uri, challenge FROM c`;

const logger = pino(pino.destination({ dest: 1, sync: false, minLength: 4096 }));
const registry = new Registry();
const durations = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'request durations',
  labelNames: ['method', 'route', 'status'],
  registers: [registry],
});
const series = new Map();

function cookie(req, name) {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A path on this server to go back to after the login (anything else: `/`). */
const localPath = (value) => (typeof value === 'string' && value.startsWith('/') && !value.startsWith('//') ? value : '/');

function basicClient(req) {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(req.headers.authorization ?? '');
  if (!match) return undefined;
  let id;
  let secret;
  try {
    [id, secret] = Buffer.from(match[1], 'base64').toString('utf8').split(':').map(decodeURIComponent);
  } catch {
    return undefined;
  }
  if (id !== CLIENT.id) return undefined;
  return timingSafeEqual(
    createHash('sha256')
      .update(secret ?? '')
      .digest(),
    CLIENT_SECRET_HASH,
  )
    ? CLIENT
    : undefined;
}

class OAuthController {
  loginForm(req, res) {
    const csrf = randomBytes(16).toString('base64url');
    res.setHeader('Set-Cookie', `login_csrf=${csrf}; Path=/login; HttpOnly; SameSite=Lax`);
    res
      .type('html')
      .send(
        `<form method="post"><input type="hidden" name="csrf" value="${csrf}">` +
          `<input type="hidden" name="return_to" value="${localPath(req.query.return_to).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')}"></form>`,
      );
  }

  async login(req, res) {
    if (!req.body || req.body.csrf !== cookie(req, 'login_csrf')) return res.status(400).send('csrf');
    const secret = randomBytes(32).toString('base64url');
    await redeeming.query({
      text: `INSERT INTO floor_sessions (id, user_id, expires_at) VALUES ($1, $2, now() + interval '1 day')`,
      values: [sha256(secret), USER_ID],
    });
    res.setHeader('Set-Cookie', `oauth_session=${secret}; Path=/; HttpOnly; SameSite=Lax`);
    res.redirect(303, localPath(req.body.return_to));
  }

  async authorize(req, res) {
    const q = req.query;
    if (q.client_id !== CLIENT.id || q.redirect_uri !== CLIENT.redirectUri) return res.status(400).send('invalid client or redirect_uri');
    const back = (params) =>
      res.redirect(302, `${CLIENT.redirectUri}?${new URLSearchParams({ ...params, state: q.state ?? '', iss: ISSUER })}`);
    if (q.response_type !== 'code' || q.code_challenge_method !== 'S256' || typeof q.code_challenge !== 'string') {
      return back({ error: 'invalid_request' });
    }
    if (typeof q.scope !== 'string' || !q.scope.split(' ').every((s) => SCOPES.has(s))) return back({ error: 'invalid_scope' });
    const session = cookie(req, 'oauth_session');
    const login = () => res.redirect(302, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
    if (!session) return login();
    const code = randomBytes(32).toString('base64url');
    const issued = await issuing.query({
      name: 'floor_issue',
      text: ISSUE,
      values: [sha256(code), sha256(session), CLIENT.id, q.scope, q.redirect_uri, q.code_challenge],
    });
    if (issued.rowCount === 0) return login();
    back({ code });
  }

  async token(req, res) {
    const client = basicClient(req);
    if (!client) throw new UnauthorizedException({ error: 'invalid_client' });
    const { grant_type: grantType, code, redirect_uri: redirectUri, code_verifier: verifier } = req.body ?? {};
    if (grantType !== 'authorization_code' || typeof code !== 'string' || typeof verifier !== 'string') {
      throw new BadRequestException({ error: 'invalid_request' });
    }
    const refresh = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const { rows } = await redeeming.query({
      name: 'floor_redeem',
      text: REDEEM,
      values: [sha256(code), client.id, sha256(refresh), redirectUri ?? null, challenge],
    });
    const row = rows[0];
    if (!row || row.redirect_uri !== redirectUri || row.challenge !== challenge) throw new BadRequestException({ error: 'invalid_grant' });
    const accessToken = jwt.sign(
      { iss: ISSUER, sub: row.user_id, aud: ISSUER, client_id: client.id, scope: row.scope, jti: randomUUID() },
      { expiresIn: 900, header: { alg: 'RS256', kid: KID, typ: 'at+jwt' } },
    );
    res.setHeader('Pragma', 'no-cache');
    return { access_token: accessToken, token_type: 'Bearer', expires_in: 900, refresh_token: refresh, scope: row.scope };
  }

  resource(req) {
    const { sub, client_id: clientId, scope } = req.user;
    return { data: { sub, client_id: clientId, scope, message: 'You have accessed a protected resource.' } };
  }
}

const verified = new LRUCache({ max: 10_000, ttl: 900_000 });
class BearerJwtStrategy extends PassportStrategy(BearerStrategy, 'bearer') {
  validate(token) {
    let claims = verified.get(token);
    if (!claims) {
      claims = jwt.verify(token, { algorithms: ['RS256'], issuer: ISSUER, audience: ISSUER });
      verified.set(token, claims, { ttl: Math.max(1, claims.exp * 1000 - Date.now()) });
    }
    if (!String(claims.scope).split(' ').includes('users:read')) return false;
    return claims;
  }
}
new BearerJwtStrategy();

const proto = OAuthController.prototype;
const method = (name, ...decorators) => {
  const descriptor = Object.getOwnPropertyDescriptor(proto, name);
  for (const decorate of decorators) decorate(proto, name, descriptor);
};
method('loginForm', Get('login'));
Req()(proto, 'loginForm', 0);
Res()(proto, 'loginForm', 1);
method('login', Post('login'));
Req()(proto, 'login', 0);
Res()(proto, 'login', 1);
method('authorize', Get('authorize'));
Req()(proto, 'authorize', 0);
Res()(proto, 'authorize', 1);
method('token', Post('token'), HttpCode(200), Header('Cache-Control', 'no-store'), UseGuards(ThrottlerGuard));
Req()(proto, 'token', 0);
Res({ passthrough: true })(proto, 'token', 1);
method('resource', Get('api/resource'), UseGuards(AuthGuard('bearer')));
Req()(proto, 'resource', 0);
Controller()(OAuthController);

class FloorModule {}
Module({
  imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 1_000_000_000 }], storage: new MemoryThrottlerStorage() })],
  controllers: [OAuthController],
})(FloorModule);

const Adapter = (await import(`${SERVICE_DIST}/common/express-adapter.js`)).default.ExpressHttpAdapter;
const app = await NestFactory.create(FloorModule, new Adapter(), { logger: false, bodyParser: false });
app.set('query parser', 'simple');
app.set('etag', false);
app.disable('x-powered-by');
app.use((req, res, next) => {
  const started = performance.now();
  const id = randomUUID();
  res.setHeader('X-Request-Id', id);
  res.on('finish', () => {
    const ms = performance.now() - started;
    const route = req.route?.path ?? 'unmatched';
    logger.info(
      { req: { id, method: req.method, path: req.path }, route, res: { statusCode: res.statusCode }, responseTime: Math.round(ms) },
      'request completed',
    );
    const key = `${req.method} ${route} ${res.statusCode}`;
    let child = series.get(key);
    if (!child) series.set(key, (child = durations.labels(req.method, route, String(res.statusCode))));
    child.observe(ms / 1000);
  });
  next();
});
app.use(helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } }, strictTransportSecurity: false }));
app.useBodyParser('urlencoded', { limit: '100kb', extended: false, parameterLimit: 100 });
await app.listen(PORT, HOST);
process.stdout.write(
  `${JSON.stringify({ ready: true, issuer: ISSUER, clientId: CLIENT.id, clientSecret: CLIENT.secret, redirectUri: CLIENT.redirectUri, pid: process.pid })}\n`,
);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 2000).unref();
  app
    .close()
    .then(() => Promise.all([issuing.end(), redeeming.end()]))
    .then(
      () => process.exit(0),
      () => process.exit(1),
    );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
