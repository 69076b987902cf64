/**
 * How a person proved who they are at sign-in, as the `amr` claim names it (RFC 8176): `pwd` a password, `otp` a
 * one-time code, `hwk`/`swk` a key bound to one authenticator or synced between devices (a passkey), `user` the
 * authenticator verified the person (a PIN or biometric), `mfa` more than one factor, `fed` a company identity
 * provider (a connection) signed the person in.
 */
export type AuthenticationMethod = 'pwd' | 'otp' | 'hwk' | 'swk' | 'user' | 'fed' | 'mfa';

export type AuthenticationMethods = readonly AuthenticationMethod[];

const ORDER: readonly AuthenticationMethod[] = ['pwd', 'otp', 'hwk', 'swk', 'user', 'fed', 'mfa'];

/**
 * A step-up's methods: those of the session it strengthens (space-separated, as stored) and the factor's, each
 * once, in a fixed order.
 */
export function combinedAmr(prior: string | null, added: AuthenticationMethods): AuthenticationMethods {
  const all = new Set<string>([...(prior ?? '').split(' '), ...added]);
  return ORDER.filter((method) => all.has(method));
}
