/**
 * Emitted (and awaited) by `keys:reencrypt` once the signing keys are sealed under KEY_ENCRYPTION_KEY, so that a
 * module keeping other secrets sealed with the same key-encryption key (second factors) re-seals them too, without
 * the keys module knowing it. Each listener returns how many of its secrets it re-sealed, by name.
 */
export const KEYS_REENCRYPTING = 'keys.reencrypting';

export type ResealedSecrets = Record<string, number>;
