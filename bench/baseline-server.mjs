// Baseline for `GET /api/resource`: a bare node:http server that verifies the bearer token with jose on every
// request, the least a resource server has to do. It fetches the service's JWKS once at start.
//
//   PORT=4000 ISSUER=http://127.0.0.1:3000 JWKS_URL=http://127.0.0.1:3000/.well-known/jwks.json \
//     node bench/baseline-server.mjs
//
// Env: PORT, HOST (127.0.0.1), ISSUER, AUDIENCE (default ISSUER), JWKS_URL (default ISSUER/.well-known/jwks.json),
// CONTRACT_HEADERS=1 to answer with the headers the contract asks of the service besides (helmet's defaults and an
// `X-Request-Id`), so that their cost on both ends of the connection can be told from the rest.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import helmet from 'helmet';
import { createLocalJWKSet, jwtVerify } from 'jose';

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 4000);
const issuer = process.env.ISSUER;
if (!issuer) {
  process.stderr.write('ISSUER is required\n');
  process.exit(1);
}
const audience = process.env.AUDIENCE || issuer;
const jwksUrl = process.env.JWKS_URL || `${issuer}/.well-known/jwks.json`;

const jwksResponse = await fetch(jwksUrl, { signal: AbortSignal.timeout(10_000) });
if (!jwksResponse.ok) {
  process.stderr.write(`GET ${jwksUrl}: HTTP ${jwksResponse.status}\n`);
  process.exit(1);
}
const keys = createLocalJWKSet(await jwksResponse.json());
const options = { algorithms: ['RS256'], typ: 'at+jwt', issuer, audience, clockTolerance: 30 };
const BEARER = /^bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)$/i;
const securityHeaders = process.env.CONTRACT_HEADERS === '1' ? helmet() : undefined;

function send(res, status, body, headers = {}) {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

function unauthorized(res, header) {
  send(res, 401, { error: 'invalid_token' }, { 'WWW-Authenticate': header });
}

const server = http.createServer(async (req, res) => {
  if (securityHeaders) {
    securityHeaders(req, res, () => {});
    res.setHeader('X-Request-Id', randomUUID());
  }
  if (req.method !== 'GET' || req.url !== '/api/resource') {
    send(res, 404, { error: 'not_found' });
    return;
  }
  const match = BEARER.exec((req.headers.authorization ?? '').trim());
  if (!match) {
    unauthorized(res, 'Bearer realm="api"');
    return;
  }
  try {
    const { payload } = await jwtVerify(match[1], keys, options);
    send(res, 200, {
      data: {
        sub: payload.sub,
        client_id: payload.client_id,
        scope: payload.scope,
        message: 'You have accessed a protected resource.',
      },
    });
  } catch {
    unauthorized(res, 'Bearer error="invalid_token"');
  }
});

server.keepAliveTimeout = 65_000;
server.listen(port, host, () => process.stdout.write(`baseline listening on http://${host}:${port}\n`));

const stop = () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  // Do not hang on a connection that stays busy.
  setTimeout(() => process.exit(0), 2000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
