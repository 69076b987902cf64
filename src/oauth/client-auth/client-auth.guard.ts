import { auditContextOf } from '../../audit/audit-events';
import { type CanActivate, type ExecutionContext, Injectable, createParamDecorator } from '@nestjs/common';
import type { SchemaObject } from '@nestjs/swagger';
import type { Request } from 'express';
import { CONTROL_CHARACTER } from '../../common/text';
import { JWT_BEARER_ASSERTION_TYPE } from './client-assertion';
import { ClientAuthenticator } from './client-authenticator';
import type { Client } from '../entities/client.entity';
import { OAuthError } from '../oauth-error';

type OAuthRequest = Request & { oauthForm?: Record<string, string>; oauthClient?: Client };

/** The parameters that may be repeated: `resource` (RFC 8707 2) and a token exchange's `audience` (RFC 8693 2.1). */
const REPEATABLE = new Set(['resource', 'audience']);

/**
 * Reads a form body: only `application/x-www-form-urlencoded`, no parameter twice (RFC 6749 3.2) but those
 * {@link REPEATABLE}, no control characters.
 */
function formBody(req: Request): Record<string, string> {
  if (!req.is('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded.');
  }
  const body = (req.body ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(body)) {
    // A repeatable parameter's values become one space-separated list, as scopes are.
    const value = REPEATABLE.has(name) && Array.isArray(raw) && raw.every((v) => typeof v === 'string') ? raw.join(' ') : raw;
    if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} was sent more than once.`);
    // No OAuth parameter holds one; PostgreSQL could not even store NUL.
    if (CONTROL_CHARACTER.test(name) || CONTROL_CHARACTER.test(value)) {
      throw new OAuthError('invalid_request', 'A parameter contains control characters.');
    }
    out[name] = value;
  }
  return out;
}

/**
 * Client authentication at /token, /revoke and /introspect (RFC 6749 2.3): reads the form body, authenticates
 * the client by `client_secret_basic`, `client_secret_post`, `private_key_jwt` or `none`, and hands both to the handler through
 * {@link AuthenticatedClient} and {@link OAuthForm}.
 */
@Injectable()
export class ClientAuthGuard implements CanActivate {
  constructor(private readonly clients: ClientAuthenticator) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<OAuthRequest>();
    const form = formBody(req);
    req.oauthForm = form;
    req.oauthClient = await this.clients.authenticate(
      {
        authorization: req.headers.authorization,
        clientId: form.client_id,
        clientSecret: form.client_secret,
        clientAssertionType: form.client_assertion_type,
        clientAssertion: form.client_assertion,
        endpoint: req.path,
      },
      auditContextOf(req),
    );
    return true;
  }
}

/** The form fields of `private_key_jwt` at every endpoint {@link ClientAuthGuard} guards, as OpenAPI describes them. */
export const CLIENT_ASSERTION_PROPERTIES: Record<string, SchemaObject> = {
  client_assertion_type: { type: 'string', enum: [JWT_BEARER_ASSERTION_TYPE], description: 'private_key_jwt (RFC 7523 2.2)' },
  client_assertion: {
    type: 'string',
    description:
      'private_key_jwt: a JWT signed by a key of the client (RS256, ES256 or EdDSA/Ed25519); iss = sub = client_id, aud the issuer or this endpoint, exp at most 5 minutes ahead, jti used once',
  },
};

/** The client that {@link ClientAuthGuard} authenticated. */
export const AuthenticatedClient = createParamDecorator((_: unknown, ctx: ExecutionContext): Client => {
  const client = ctx.switchToHttp().getRequest<OAuthRequest>().oauthClient;
  if (!client) throw new Error('@AuthenticatedClient() used without ClientAuthGuard');
  return client;
});

/** The form parameters that {@link ClientAuthGuard} read (each one a single string). */
export const OAuthForm = createParamDecorator((_: unknown, ctx: ExecutionContext): Record<string, string> => {
  const form = ctx.switchToHttp().getRequest<OAuthRequest>().oauthForm;
  if (!form) throw new Error('@OAuthForm() used without ClientAuthGuard');
  return form;
});
