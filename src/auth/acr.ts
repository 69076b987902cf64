/**
 * Authentication levels, the `acr` values this server issues and honours (OpenID Connect Core 2, RFC 9470), from
 * weakest to strongest: `aal1` one factor (a password); `aal2` two (a password and a one-time code, or a passkey,
 * which the authenticator unlocks with a PIN or biometric); `phr` phishing-resistant (a passkey: bound to this
 * server's domain, so a look-alike site cannot replay it). The names follow NIST SP 800-63B's assurance levels and
 * the OpenID EAP's `phr`.
 */
export const ACR_VALUES = ['aal1', 'aal2', 'phr'] as const;
export type Acr = (typeof ACR_VALUES)[number];

/** The level a sign-in reached, from how it was done (RFC 8176 `amr` values). */
export function acrOf(amr: readonly string[]): Acr {
  if (amr.includes('hwk') || amr.includes('swk')) return 'phr';
  return amr.includes('mfa') ? 'aal2' : 'aal1';
}

/**
 * The level of a login session or grant from its stored `amr` (space-separated); one kept from before `amr` was
 * stored counts as a password sign-in.
 */
export function acrOfStored(amr: string | null): Acr {
  return acrOf((amr ?? 'pwd').split(' '));
}

/** Whether a sign-in of level `acr` (a token's claim: anything, or nothing) is at least `required`. */
export function meetsAcr(acr: unknown, required: Acr): boolean {
  return ACR_VALUES.indexOf(acr as Acr) >= ACR_VALUES.indexOf(required);
}

/**
 * The level an `acr_values` request parameter asks for: the weakest of the values this server knows (any of them
 * satisfies the request, Core 3.1.2.1), or null when it names none of them.
 */
export function requestedAcr(acrValues: readonly string[]): Acr | null {
  const known = ACR_VALUES.filter((level) => acrValues.includes(level));
  return known[0] ?? null;
}

/** The stronger of two levels (null: no requirement). */
export function strongerAcr(a: Acr | null, b: Acr | null): Acr | null {
  if (a === null || b === null) return a ?? b;
  return ACR_VALUES.indexOf(a) >= ACR_VALUES.indexOf(b) ? a : b;
}
