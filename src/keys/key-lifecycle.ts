import type { RotationSchedule } from './keys.config';

/**
 * The lifecycle state of a signing key as last recorded by the rotation check. What a key does at a given moment
 * (publish, sign, verify) follows from its timestamps alone ({@link phaseAt}), so every instance agrees without
 * messaging; the recorded state only lets each change be reported once.
 */
export type KeyState = 'published' | 'active' | 'retired';

/** A key's phase at an instant: published (in the JWKS, not signing yet), active, retired, or removed. */
export type KeyPhase = KeyState | 'removed';

/** The timestamps of a key (epoch ms). */
export interface KeyTimeline {
  kid: string;
  /** When it signs from (and is published before; it is published from its creation). */
  activatesAt: number;
  /** When it stopped (or will stop) signing: its successor's activation. Null while no successor is planned. */
  retiresAt: number | null;
  /** When it leaves the JWKS and its tokens are refused: its retirement plus KEY_RETIREMENT_DAYS. */
  unpublishesAt: number | null;
  state: KeyState;
}

/** One change to the stored keys; the rotation check's (and an emergency rotation's) outcome. */
export type KeyAction =
  /** Store a new key, published now and signing from `activatesAt`. */
  | { type: 'publish'; kid: string; activatesAt: number }
  /** Plan when a key stops signing and when it leaves the JWKS. */
  | { type: 'schedule-retirement'; kid: string; retiresAt: number; unpublishesAt: number }
  /** Record that a key signs now / no longer signs. */
  | { type: 'activate'; kid: string }
  | { type: 'retire'; kid: string }
  /** Delete a key: it has left the JWKS, or (emergency rotation) it was published but never signed. */
  | { type: 'remove'; kid: string };

export function phaseAt(key: KeyTimeline, now: number): KeyPhase {
  if (key.unpublishesAt !== null && now >= key.unpublishesAt) return 'removed';
  if (now < key.activatesAt) return 'published';
  if (key.retiresAt !== null && now >= key.retiresAt) return 'retired';
  return 'active';
}

/** Newest activation first (ties: lower kid first), the order in which the signing key is chosen. */
export function byActivation(a: KeyTimeline, b: KeyTimeline): number {
  return b.activatesAt - a.activatesAt || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);
}

/** The key that signs at `now`: of the keys still published, the one activated last. */
export function signingKeyAt<K extends KeyTimeline>(keys: readonly K[], now: number): K | undefined {
  return [...keys].sort(byActivation).find((key) => key.activatesAt <= now && phaseAt(key, now) !== 'removed');
}

const PHASES: readonly KeyPhase[] = ['published', 'active', 'retired', 'removed'];
const STEP_INTO = { active: 'activate', retired: 'retire', removed: 'remove' } as const;

/**
 * The recorded-state changes that time has brought: each step a key has gone through since its recorded state
 * (activated, retired, left the JWKS), in that order, even when one check sees several.
 */
function transitions(keys: readonly KeyTimeline[], now: number): KeyAction[] {
  const actions: KeyAction[] = [];
  for (const key of [...keys].sort(byActivation)) {
    const from = PHASES.indexOf(key.state);
    const to = PHASES.indexOf(phaseAt(key, now));
    for (const phase of PHASES.slice(from + 1, to + 1) as (keyof typeof STEP_INTO)[]) {
      actions.push({ type: STEP_INTO[phase], kid: key.kid });
    }
  }
  return actions;
}

/**
 * The scheduled check: what to change at `now`. Records the transitions time has brought, and when the signing
 * key is due for replacement (KEY_ROTATION_DAYS after its activation, less KEY_PROPAGATION_DAYS) and no successor
 * is published yet, publishes `newKid` to sign from the due time (at least KEY_PROPAGATION_DAYS from now) and plans
 * the current key's retirement at that instant.
 */
export function planScheduledRotation(keys: readonly KeyTimeline[], now: number, schedule: RotationSchedule, newKid: string): KeyAction[] {
  const actions = transitions(keys, now);
  const current = signingKeyAt(keys, now);
  const pending = keys.some((key) => key.activatesAt > now && phaseAt(key, now) !== 'removed');
  if (schedule.rotationMs > 0 && current && !pending && now >= current.activatesAt + schedule.rotationMs - schedule.propagationMs) {
    const activatesAt = Math.max(current.activatesAt + schedule.rotationMs, now + schedule.propagationMs);
    actions.push(
      { type: 'publish', kid: newKid, activatesAt },
      { type: 'schedule-retirement', kid: current.kid, retiresAt: activatesAt, unpublishesAt: activatesAt + schedule.retirementMs },
    );
  }
  return actions;
}

/**
 * An emergency rotation (`keys:rotate`): `newKid` signs at once, the key signing until now retires at once (and
 * stays published KEY_RETIREMENT_DAYS for the tokens it signed), and a successor published but not signing yet is
 * withdrawn: it was made before the emergency, and the schedule starts again from the new key.
 */
export function planEmergencyRotation(keys: readonly KeyTimeline[], now: number, schedule: RotationSchedule, newKid: string): KeyAction[] {
  const actions = transitions(keys, now);
  const current = signingKeyAt(keys, now);
  actions.push({ type: 'publish', kid: newKid, activatesAt: now }, { type: 'activate', kid: newKid });
  if (current) {
    actions.push(
      { type: 'schedule-retirement', kid: current.kid, retiresAt: now, unpublishesAt: now + schedule.retirementMs },
      { type: 'retire', kid: current.kid },
    );
  }
  for (const key of keys) if (key.activatesAt > now && phaseAt(key, now) !== 'removed') actions.push({ type: 'remove', kid: key.kid });
  return actions;
}
