import { CONTROL_CHARACTER } from '../../common/text';
import { defineScopes } from '../../auth/scopes';

/**
 * The OpenID Connect scopes (Core 1.0 sections 3.1.2.1 and 5.4): `openid` makes a request an OpenID Connect one (an
 * ID token with the tokens, the UserInfo endpoint); `profile` and `email` add claims to what UserInfo answers.
 */
export const OidcScope = defineScopes({
  openid: { name: 'openid', description: 'Sign you in with your account here (the app learns your account id and when you logged in)' },
  profile: { name: 'profile', description: 'See your name and gender, and when your profile last changed' },
  email: { name: 'email', description: 'See your email address' },
});

/** The claims each OpenID Connect scope releases at the UserInfo endpoint (besides `sub`, always released). */
export const SCOPE_CLAIMS: Readonly<Record<string, readonly string[]>> = {
  [OidcScope.profile]: ['name', 'gender', 'updated_at'],
  [OidcScope.email]: ['email', 'email_verified'],
};

/** The longest `login_hint` used: an email address is at most 254 characters. */
export const MAX_LOGIN_HINT_LENGTH = 254;

/**
 * A `login_hint` fit to prefill the login form's email with (and used for nothing else): one string of at most
 * an email address's length, without control characters, not blank; else undefined.
 */
export function usableLoginHint(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_LOGIN_HINT_LENGTH || CONTROL_CHARACTER.test(value)) return undefined;
  return value.trim() || undefined;
}

/** The OpenID Connect scopes: a request names them to get them (a client's registered scope alone does not). */
export const OIDC_SCOPES: ReadonlySet<string> = new Set<string>([OidcScope.openid, OidcScope.profile, OidcScope.email]);
