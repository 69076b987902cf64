import { ConfigError, type Env } from '../config/env';
import { ROLES, type Role } from '../users/user.entity';

/**
 * `MFA_REQUIRED_ROLES`: the roles whose people must sign in with a second factor (comma-separated, `none` for
 * none). Default: `admin` in production; none otherwise, so that the development demo's administrator signs in with
 * the password printed at start.
 */
export class MfaConfig {
  static readonly variables = ['MFA_REQUIRED_ROLES'] as const;
  readonly requiredRoles: ReadonlySet<Role>;

  constructor(env: Env) {
    // Empty is unset (the default), so that a copied .env.example cannot turn the production default off; `none` does.
    const raw = env.MFA_REQUIRED_ROLES?.trim() || (env.NODE_ENV === 'production' ? 'admin' : 'none');
    const listed = raw === 'none' ? [] : raw.split(',').map((role) => role.trim());
    const unknown = listed.filter((role) => !(ROLES as readonly string[]).includes(role));
    if (unknown.length) {
      throw new ConfigError(`MFA_REQUIRED_ROLES must list roles among ${ROLES.join(', ')} (or be none), got "${unknown.join(', ')}"`);
    }
    this.requiredRoles = new Set(listed as Role[]);
  }

  /** Whether a person of this role must sign in with a second factor. */
  requires(role: Role): boolean {
    return this.requiredRoles.has(role);
  }
}
