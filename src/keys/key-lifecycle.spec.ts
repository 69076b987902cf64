import { describe, expect, it } from 'vitest';
import { type KeyTimeline, phaseAt, planEmergencyRotation, planScheduledRotation, signingKeyAt } from './key-lifecycle';

const DAY = 86_400_000;
const T0 = Date.UTC(2030, 0, 1);
const SCHEDULE = { rotationMs: 90 * DAY, propagationMs: 14 * DAY, retirementMs: 14 * DAY };

function key(kid: string, activatesAt: number, more: Partial<KeyTimeline> = {}): KeyTimeline {
  return { kid, activatesAt, retiresAt: null, unpublishesAt: null, state: 'active', ...more };
}

describe('signing key lifecycle', () => {
  it('derives the phase from the timestamps alone: published, active, retired, removed', () => {
    const k = key('k', T0, { retiresAt: T0 + 90 * DAY, unpublishesAt: T0 + 104 * DAY, state: 'published' });
    expect(phaseAt(k, T0 - 1)).toBe('published');
    expect(phaseAt(k, T0)).toBe('active');
    expect(phaseAt(k, T0 + 90 * DAY - 1)).toBe('active');
    expect(phaseAt(k, T0 + 90 * DAY)).toBe('retired');
    expect(phaseAt(k, T0 + 104 * DAY - 1)).toBe('retired');
    expect(phaseAt(k, T0 + 104 * DAY)).toBe('removed');
  });

  it('signs with the published key activated last, from the instant of its activation', () => {
    const old = key('old', T0, { retiresAt: T0 + 90 * DAY, unpublishesAt: T0 + 104 * DAY });
    const next = key('next', T0 + 90 * DAY, { state: 'published' });
    expect(signingKeyAt([next, old], T0 + 90 * DAY - 1)?.kid).toBe('old');
    expect(signingKeyAt([next, old], T0 + 90 * DAY)?.kid).toBe('next');
    expect(signingKeyAt([key('b', T0), key('a', T0)], T0)?.kid).toBe('a');
    expect(signingKeyAt([next], T0)).toBeUndefined();
  });

  it('does nothing before the next key is due', () => {
    const keys = [key('k1', T0)];
    expect(planScheduledRotation(keys, T0 + 76 * DAY - 1, SCHEDULE, 'k2')).toEqual([]);
  });

  it("publishes the next key KEY_PROPAGATION_DAYS before its activation and plans the current key's retirement", () => {
    const keys = [key('k1', T0)];
    expect(planScheduledRotation(keys, T0 + 76 * DAY, SCHEDULE, 'k2')).toEqual([
      { type: 'publish', kid: 'k2', activatesAt: T0 + 90 * DAY },
      { type: 'schedule-retirement', kid: 'k1', retiresAt: T0 + 90 * DAY, unpublishesAt: T0 + 104 * DAY },
    ]);
  });

  it('gives a key found due late (the service was down) its whole propagation time', () => {
    const now = T0 + 200 * DAY;
    expect(planScheduledRotation([key('k1', T0)], now, SCHEDULE, 'k2')[0]).toEqual({
      type: 'publish',
      kid: 'k2',
      activatesAt: now + 14 * DAY,
    });
  });

  it('publishes no second key while one waits for its activation', () => {
    const keys = [
      key('k1', T0, { retiresAt: T0 + 90 * DAY, unpublishesAt: T0 + 104 * DAY }),
      key('k2', T0 + 90 * DAY, { state: 'published' }),
    ];
    expect(planScheduledRotation(keys, T0 + 80 * DAY, SCHEDULE, 'k3')).toEqual([]);
  });

  it('never rotates on its own with KEY_ROTATION_DAYS=0', () => {
    expect(planScheduledRotation([key('k1', T0)], T0 + 1000 * DAY, { ...SCHEDULE, rotationMs: 0 }, 'k2')).toEqual([]);
  });

  it('records the activation, the retirement and the removal once their times have passed', () => {
    const keys = [
      key('k1', T0, { retiresAt: T0 + 90 * DAY, unpublishesAt: T0 + 104 * DAY }),
      key('k2', T0 + 90 * DAY, { state: 'published' }),
    ];
    expect(planScheduledRotation(keys, T0 + 90 * DAY, SCHEDULE, 'k3')).toEqual([
      { type: 'activate', kid: 'k2' },
      { type: 'retire', kid: 'k1' },
    ]);
    const recorded = [
      { ...keys[0], state: 'retired' as const },
      { ...keys[1], state: 'active' as const },
    ];
    expect(planScheduledRotation(recorded, T0 + 104 * DAY - 1, SCHEDULE, 'k3')).toEqual([]);
    expect(planScheduledRotation(recorded, T0 + 104 * DAY, SCHEDULE, 'k3')).toEqual([{ type: 'remove', kid: 'k1' }]);
  });

  it('emergency rotation: the new key signs at once, the current one retires at once, a waiting successor is withdrawn', () => {
    const now = T0 + 80 * DAY;
    const keys = [
      key('k1', T0, { retiresAt: T0 + 90 * DAY, unpublishesAt: T0 + 104 * DAY }),
      key('k2', T0 + 90 * DAY, { state: 'published' }),
    ];
    expect(planEmergencyRotation(keys, now, SCHEDULE, 'k3')).toEqual([
      { type: 'publish', kid: 'k3', activatesAt: now },
      { type: 'activate', kid: 'k3' },
      { type: 'schedule-retirement', kid: 'k1', retiresAt: now, unpublishesAt: now + 14 * DAY },
      { type: 'retire', kid: 'k1' },
      { type: 'remove', kid: 'k2' },
    ]);
  });

  it('after an emergency rotation the schedule counts from the new key', () => {
    const now = T0 + 80 * DAY;
    const keys = [key('k1', T0, { retiresAt: now, unpublishesAt: now + 14 * DAY, state: 'retired' }), key('k3', now, { state: 'active' })];
    expect(planScheduledRotation(keys, now + 76 * DAY - 1, SCHEDULE, 'k4')).toEqual([{ type: 'remove', kid: 'k1' }]);
    expect(planScheduledRotation(keys, now + 76 * DAY, SCHEDULE, 'k4')).toContainEqual({
      type: 'publish',
      kid: 'k4',
      activatesAt: now + 90 * DAY,
    });
  });
});
