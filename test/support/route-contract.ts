// What the contract says of the routes, for the route inventory (test/e2e/route-inventory.e2e-spec.ts); a module
// adds its own routes through its declarations (`@Access({...})`, `@Public()`), which the inventory reads.

/**
 * The public set: `/authorize*`, `/token`, `/revoke`, `/introspect`, `/login` and its second steps `/login/code` and `/login/enrol`, `/logout`, `/end-session*` (OpenID
 * Connect RP-initiated logout, whose confirmation form is checked against the login session), `/register*` (dynamic
 * registration, which takes its own tokens), the account pages `/account/apps*` and `/account/security*` (the login session is their
 * authentication), `/.well-known/*`, `/health/*`, `/docs*`, `/metrics` (public to the bearer guard only: its own
 * guard admits the configured networks and the metrics token, a scraper holds no access token), and the demo
 * client's redirect URI.
 */
export const PUBLIC_PATTERNS = [
  /^\/authorize(\/.*)?$/,
  /^\/token$/,
  /^\/par$/,
  /^\/device_authorization$/,
  /^\/device(\/decision)?$/,
  /^\/revoke$/,
  /^\/introspect$/,
  /^\/register(\/:clientId)?$/,
  /^\/login(\/code|\/enrol|\/step-up|\/passkey(\/options)?|\/connections\/(callback|:connectionId))?$/,
  /^\/logout$/,
  /^\/(forgot|reset)-password$/,
  /^\/end-session(\/confirm)?$/,
  /^\/(account)?$/,
  /^\/account\/apps(\/revoke)?$/,
  /^\/account\/security(\/totp(\/confirm|\/remove)?|\/passkeys(\/options|\/rename|\/remove)?)?$/,
  /^\/assets\/(webauthn|passkeys)\.js$/,
  /^\/\.well-known\/.+$/,
  /^\/health\/.+$/,
  /^\/docs(\/.*)?$/,
  /^\/metrics$/,
  /^\/demo\/callback$/,
];

/**
 * Public routes the contract names (authorization server, operations, docs), the connected-apps page and the
 * metrics, which must exist and need no access token.
 */
export const REQUIRED_PUBLIC = [
  'GET /authorize',
  'POST /authorize/consent',
  'POST /token',
  'POST /par',
  // RFC 8628: the device authorization endpoint and the page where the person enters the code.
  'POST /device_authorization',
  'GET /device',
  'POST /device',
  'POST /device/decision',
  'POST /revoke',
  'POST /introspect',
  'GET /login',
  'POST /login',
  'POST /logout',
  'GET /end-session',
  'POST /end-session',
  'POST /end-session/confirm',
  'GET /account/apps',
  'POST /account/apps/revoke',
  'GET /.well-known/jwks.json',
  'GET /.well-known/oauth-authorization-server',
  'GET /.well-known/openid-configuration',
  'GET /health/live',
  'GET /health/ready',
  // A scraper holds no access token: the route's own guard admits METRICS_ALLOW's networks and METRICS_TOKEN.
  'GET /metrics',
];

/**
 * Routes of the OAuth protocol and its HTML pages, whose query strings follow RFC 6749 (unrecognised parameters
 * are ignored, section 3.1) instead of being declared. Every other route declares its query.
 */
export const PROTOCOL_ROUTES = [
  'GET /authorize',
  'POST /authorize/consent',
  'POST /token',
  'POST /par',
  'POST /device_authorization',
  'GET /device',
  'POST /device',
  'POST /device/decision',
  'POST /revoke',
  'POST /introspect',
  'GET /login',
  'POST /login',
  'POST /login/code',
  'POST /login/enrol',
  // Step-up: where /authorize sends a session weaker than the request's level (return_to and acr, as /login's query).
  'GET /login/step-up',
  'POST /logout',
  // OpenID Connect RP-Initiated Logout: a protocol endpoint and its confirmation form.
  'GET /end-session',
  'POST /end-session',
  'POST /end-session/confirm',
  'GET /demo/callback',
  // Company sign-in, this service as a client of the company's provider: the start (return_to) and the callback.
  'GET /login/connections/:connectionId',
  'GET /login/connections/callback',
  // RFC 7591/7592: protocol endpoints, which ignore parameters they do not know.
  'POST /register',
  'GET /register/:clientId',
  'PUT /register/:clientId',
  'DELETE /register/:clientId',
];

/**
 * The contract's routes that only an administrator may call (listing, creating and deleting users; the admin API
 * for clients; the audit trail). A module may add its own: which routes are admin-only is read from the routes'
 * `@Access({ people })` and checked against what they answer.
 */
export const ADMIN_ONLY = [
  'GET /users',
  'POST /users',
  'DELETE /users/:userId',
  'GET /admin/clients',
  'GET /admin/clients/:clientId',
  'POST /admin/clients',
  'PUT /admin/clients/:clientId',
  'POST /admin/clients/:clientId/secret',
  'DELETE /admin/clients/:clientId',
  'GET /admin/audit-events',
  'GET /admin/connections',
  'GET /admin/connections/:connectionId',
  'POST /admin/connections',
  'DELETE /admin/connections/:connectionId',
];

/**
 * The contract's routes a client-credentials token (no user) may call; every other protected route acts for a
 * person. A module may add its own with `clientTokens: true`: the test reads them from the declarations.
 */
export const CLIENT_TOKEN_ROUTES = ['GET /api/resource', 'GET /users'];

/** The contract's routes on a person's own records ("self or admin"): another person's answer 404. */
export const OWN_RECORDS = [
  'GET /users/:userId',
  'PUT /users/:userId',
  'GET /users/:userId/orders',
  'GET /users/:userId/orders/:orderId',
  'POST /users/:userId/orders',
];

/** The resource routes and the scope each needs (`GET /api/resource`: any valid token). */
export const RESOURCE_SCOPES: Record<string, string[] | 'any valid token'> = {
  'GET /api/resource': 'any valid token',
  'GET /users': ['users:read'],
  'GET /users/:userId': ['users:read'],
  'POST /users': ['users:write'],
  'PUT /users/:userId': ['users:write'],
  'DELETE /users/:userId': ['users:write'],
  'GET /users/:userId/orders': ['orders:read'],
  'GET /users/:userId/orders/:orderId': ['orders:read'],
  'POST /users/:userId/orders': ['orders:write'],
  'GET /admin/clients': ['clients:admin'],
  'GET /admin/clients/:clientId': ['clients:admin'],
  'POST /admin/clients': ['clients:admin'],
  'PUT /admin/clients/:clientId': ['clients:admin'],
  'POST /admin/clients/:clientId/secret': ['clients:admin'],
  'DELETE /admin/clients/:clientId': ['clients:admin'],
  'GET /admin/audit-events': ['audit:read'],
  'GET /admin/connections': ['connections:admin'],
  'GET /admin/connections/:connectionId': ['connections:admin'],
  'POST /admin/connections': ['connections:admin'],
  'DELETE /admin/connections/:connectionId': ['connections:admin'],
  'GET /userinfo': ['openid'],
  'POST /userinfo': ['openid'],
};
