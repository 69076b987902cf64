import type { Request } from 'express';
import { parseBasicCredentials } from './basic-credentials';

/** The `sub` of a JWT, unverified (a `private_key_jwt` assertion names its client there): only to count requests by. */
function subjectOf(jwt: string): string | undefined {
  try {
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims?.sub === 'string' ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The client a request to a client-authenticated endpoint (/token, /par, /device_authorization) names, whether or not
 * it exists: the HTTP Basic user, `client_id` or its assertion's `sub`. The `token` rate-limit budget counts by it
 * (`@RateLimit('token', namedClient)`); undefined when the request names none.
 */
export function namedClient(req: Request): string | undefined {
  const basic = parseBasicCredentials(req.headers.authorization);
  if (basic) return basic.id;
  const body = req.body as Record<string, unknown> | undefined;
  if (body && typeof body.client_id === 'string') return body.client_id;
  return body && typeof body.client_assertion === 'string' ? subjectOf(body.client_assertion) : undefined;
}
