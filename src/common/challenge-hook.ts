/**
 * Rewrites the `WWW-Authenticate` challenge of a problem+json answer before it is sent. The problem+json filter
 * knows no authentication scheme: the module that issues challenges provides one under {@link CHALLENGE_HOOK} (the
 * resource server adds its metadata URL to each Bearer and DPoP challenge, RFC 9728 5.1). Without a provider,
 * challenges go out as written.
 */
export type ChallengeHook = (challenge: string) => string;

/** The provider token of the application's {@link ChallengeHook}; at most one module provides it. */
export const CHALLENGE_HOOK = Symbol('CHALLENGE_HOOK');
