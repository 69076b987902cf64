import { describe, expect, it } from 'vitest';
import { KeysConfig } from './keys.config';

const DAY = 86_400_000;

describe('KeysConfig rotation schedule', () => {
  it('rotates every 90 days, publishes 14 days ahead and keeps retired keys 14 days by default', () => {
    const config = new KeysConfig({});
    expect([config.rotationDays, config.propagationDays, config.retirementDays]).toEqual([90, 14, 14]);
    expect(config.schedule).toEqual({ rotationMs: 90 * DAY, propagationMs: 14 * DAY, retirementMs: 14 * DAY });
    expect(new KeysConfig({ KEY_ROTATION_DAYS: '0' }).schedule.rotationMs).toBe(0);
  });

  it('takes whole days only', () => {
    for (const name of ['KEY_ROTATION_DAYS', 'KEY_PROPAGATION_DAYS', 'KEY_RETIREMENT_DAYS']) {
      for (const bad of ['1.5', '-1', 'ten']) {
        expect(() => new KeysConfig({ [name]: bad })).toThrow(`${name} must be a whole number of days, got "${bad}"`);
      }
    }
    expect(() => new KeysConfig({ KEY_PROPAGATION_DAYS: '0' })).toThrow('KEY_PROPAGATION_DAYS must be from 1 to 36500 days, got "0"');
    expect(() => new KeysConfig({ KEY_RETIREMENT_DAYS: '0' })).toThrow('KEY_RETIREMENT_DAYS must be from 1 to 36500 days, got "0"');
    expect(() => new KeysConfig({ KEY_ROTATION_DAYS: '99999' })).toThrow('KEY_ROTATION_DAYS must be from 0 to 36500 days, got "99999"');
  });

  it('refuses a propagation time as long as the rotation period', () => {
    expect(() => new KeysConfig({ KEY_ROTATION_DAYS: '14' })).toThrow(
      'KEY_PROPAGATION_DAYS (14) must be less than KEY_ROTATION_DAYS (14), or set KEY_ROTATION_DAYS=0',
    );
    expect(new KeysConfig({ KEY_ROTATION_DAYS: '0', KEY_PROPAGATION_DAYS: '30' }).propagationDays).toBe(30);
  });

  it('refuses a retirement shorter than the longest access-token lifetime (ACCESS_TOKEN_TTL and the clock skew)', () => {
    expect(() => new KeysConfig({ KEY_RETIREMENT_DAYS: '1', ACCESS_TOKEN_TTL: '86400' })).toThrow(
      'KEY_RETIREMENT_DAYS (1) must cover the longest access-token lifetime: ACCESS_TOKEN_TTL plus 30 s of clock skew is 86430 s, at least 2 days',
    );
    expect(new KeysConfig({ KEY_RETIREMENT_DAYS: '1', ACCESS_TOKEN_TTL: '86370' }).retirementDays).toBe(1);
  });
});
