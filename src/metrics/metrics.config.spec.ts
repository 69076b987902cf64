import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/env';
import { MetricsConfig } from './metrics.config';

const TOKEN = 'a'.repeat(32);

describe('MetricsConfig', () => {
  it('is on, for loopback, without a token by default', () => {
    const config = new MetricsConfig({});
    expect(config.enabled).toBe(true);
    expect(config.allow.admits('127.0.0.1')).toBe(true);
    expect(config.allow.admits('::1')).toBe(true);
    expect(config.allow.admits('192.0.2.1')).toBe(false);
    expect(config.acceptsToken('')).toBe(false);
    expect(config.acceptsToken(TOKEN)).toBe(false);
  });

  it('accepts exactly METRICS_TOKEN', () => {
    const config = new MetricsConfig({ METRICS_TOKEN: TOKEN });
    expect(config.acceptsToken(TOKEN)).toBe(true);
    for (const other of ['', 'a', `${TOKEN}a`, TOKEN.slice(1), 'A'.repeat(32)]) expect(config.acceptsToken(other), other).toBe(false);
  });

  it('reads METRICS_ALLOW as a comma-separated list, or none', () => {
    const config = new MetricsConfig({ METRICS_ALLOW: ' 10.0.0.0/8 , 192.0.2.7,fd00::/8 ' });
    expect(['10.1.2.3', '192.0.2.7', 'fd00::5'].every((a) => config.allow.admits(a))).toBe(true);
    expect(config.allow.admits('127.0.0.1')).toBe(false);
    expect(new MetricsConfig({ METRICS_ALLOW: 'none' }).allow.admits('127.0.0.1')).toBe(false);
    expect(new MetricsConfig({ METRICS: 'off' }).enabled).toBe(false);
  });

  it.each([
    [{ METRICS: 'yes' }, /^METRICS must be on or off/],
    [{ METRICS_TOKEN: 'short' }, /^METRICS_TOKEN must be at least 32 characters/],
    [{ METRICS_TOKEN: `${TOKEN} x` }, /^METRICS_TOKEN/],
    [{ METRICS_ALLOW: 'localhost' }, /^METRICS_ALLOW: "localhost" is not an IP address/],
    [{ METRICS_ALLOW: '10.0.0.0/8,' }, /^METRICS_ALLOW: "" is not an IP address/],
    [{ METRICS_ALLOW: '10.0.0.0/40' }, /^METRICS_ALLOW: "10.0.0.0\/40" has an invalid prefix length/],
  ])('refuses %o with a line naming the variable', (env, message) => {
    expect(() => new MetricsConfig(env)).toThrow(ConfigError);
    expect(() => new MetricsConfig(env)).toThrow(message);
  });
});
