import { ConfigError, type Env } from '../config/env';
import { ROLES, type Role } from '../users/user.entity';

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * `MFA_REQUIRED_ROLES`: the roles whose people must sign in with a second factor (comma-separated, `none` for
 * none). Default: `admin` in production; none otherwise, so that the development demo's administrator signs in with
 * the password printed at start.
 *
 * Passkeys: `WEBAUTHN_RP_ID`, the domain passkeys are bound to (default: the issuer's host name; a company sets its
 * registrable domain, e.g. `example.com`, so that passkeys work on every host under it), and `WEBAUTHN_ORIGINS`,
 * the comma-separated origins whose pages may use them (default: the issuer's origin). Each origin's host must be
 * the relying-party id or under it.
 */
export class MfaConfig {
  static readonly variables = ['MFA_REQUIRED_ROLES', 'WEBAUTHN_RP_ID', 'WEBAUTHN_ORIGINS'] as const;
  readonly requiredRoles: ReadonlySet<Role>;
  /** Unset: the issuer's host name (see {@link relyingParty}). */
  readonly rpId: string | undefined;
  /** Unset: the issuer's origin. */
  readonly origins: readonly string[] | undefined;

  constructor(env: Env) {
    // Empty is unset (the default), so that a copied .env.example cannot turn the production default off; `none` does.
    const raw = env.MFA_REQUIRED_ROLES?.trim() || (env.NODE_ENV === 'production' ? 'admin' : 'none');
    const listed = raw === 'none' ? [] : raw.split(',').map((role) => role.trim());
    const unknown = listed.filter((role) => !(ROLES as readonly string[]).includes(role));
    if (unknown.length) {
      throw new ConfigError(`MFA_REQUIRED_ROLES must list roles among ${ROLES.join(', ')} (or be none), got "${unknown.join(', ')}"`);
    }
    this.requiredRoles = new Set(listed as Role[]);

    const rpId = env.WEBAUTHN_RP_ID?.trim().toLowerCase() || undefined;
    if (rpId !== undefined && !DOMAIN.test(rpId)) {
      throw new ConfigError(`WEBAUTHN_RP_ID must be a domain name such as example.com (no scheme, port or path), got "${rpId}"`);
    }
    this.rpId = rpId;
    const origins = env.WEBAUTHN_ORIGINS?.split(',')
      .map((o) => o.trim())
      .filter(Boolean);
    this.origins = origins?.length ? origins.map(originOf) : undefined;
    if (rpId !== undefined) {
      const hosts = this.origins ?? (URL.canParse(env.ISSUER ?? '') ? [new URL(env.ISSUER!).origin] : []);
      for (const origin of hosts)
        if (!underRpId(origin, rpId)) throw new ConfigError(`the origin ${origin} is not under WEBAUTHN_RP_ID ${rpId}`);
    }
  }

  /** The relying party passkeys are bound to, for the service whose issuer is `issuer`. */
  relyingParty(issuer: string): { rpId: string; origins: string[] } {
    const rpId = this.rpId ?? new URL(issuer).hostname;
    return { rpId, origins: [...(this.origins ?? [new URL(issuer).origin])] };
  }

  /** Whether a person of this role must sign in with a second factor. */
  requires(role: Role): boolean {
    return this.requiredRoles.has(role);
  }
}

function originOf(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== value.replace(/\/$/, '')) {
    throw new ConfigError(`WEBAUTHN_ORIGINS must list origins such as https://login.example.com (no path), got "${value}"`);
  }
  return url.origin;
}

/** WebAuthn: a page may use passkeys of a relying-party id equal to its host or a parent domain of it. */
function underRpId(origin: string, rpId: string): boolean {
  const host = new URL(origin).hostname;
  return host === rpId || host.endsWith(`.${rpId}`);
}
