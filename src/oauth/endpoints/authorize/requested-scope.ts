import { isScope } from '../../../auth/scopes';
import { askableScopes } from '../../clients/client-metadata';
import type { Client } from '../../entities/client.entity';
import { OIDC_SCOPES } from '../../oidc/oidc.scopes';

/**
 * The scope a request gets: what it names, narrowed to what the client may have (RFC 6749 3.3: an agent asks for
 * every scope the metadata lists), or, when it names none, the client's own; `invalid` (invalid_scope) when it
 * names a scope nobody defined or nothing is left.
 */
export function requestedScope(client: Client, asked: string | undefined): { scope: string } | { invalid: string } {
  // A self-registered client may ask for more than it registered (an agent after a 403 scope challenge).
  const allowed = askableScopes(client);
  // Left out, the scope is the client's, but not the OpenID Connect ones: a request that does not name `openid` is
  // not an OpenID Connect request (Core 1.0 3.1.2.1), so it gets no ID token, nor `profile`/`email`, which only
  // UserInfo (behind `openid`) releases.
  let scope = client.scope
    .split(' ')
    .filter((s) => !OIDC_SCOPES.has(s))
    .join(' ');
  if (asked !== undefined && asked.trim() !== '') {
    const requested = [...new Set(asked.split(' ').filter(Boolean))];
    const unknown = requested.filter((s) => !isScope(s));
    if (unknown.length) return { invalid: `Unknown scope: ${unknown.join(' ')}` };
    const kept = requested.filter((s) => allowed.has(s));
    if (kept.length === 0) return { invalid: `Scope not allowed for this client: ${requested.join(' ')}` };
    scope = kept.join(' ');
  }
  if (scope === '') return { invalid: 'scope is required: this client may have only OpenID Connect scopes.' };
  return { scope };
}
