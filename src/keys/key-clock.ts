/** The time the signing keys' lifecycle is reckoned in (epoch ms). Tests provide their own under {@link KEY_CLOCK}. */
export interface KeyClock {
  now(): number;
}

export const KEY_CLOCK = Symbol('KEY_CLOCK');

export const systemClock: KeyClock = { now: () => Date.now() };
