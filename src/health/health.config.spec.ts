import { describe, expect, it } from 'vitest';
import { HealthConfig } from './health.config';

describe('SHUTDOWN_DRAIN_SECONDS', () => {
  it('drains 5 s by default in production and not at all elsewhere', () => {
    expect(new HealthConfig({ NODE_ENV: 'production' }).shutdownDrainSeconds).toBe(5);
    expect(new HealthConfig({ NODE_ENV: 'development' }).shutdownDrainSeconds).toBe(0);
    expect(new HealthConfig({ NODE_ENV: 'test' }).shutdownDrainSeconds).toBe(0);
    expect(new HealthConfig({}).shutdownDrainSeconds).toBe(0);
    // Empty is unset: a copied .env.example keeps the production default.
    expect(new HealthConfig({ NODE_ENV: 'production', SHUTDOWN_DRAIN_SECONDS: '' }).shutdownDrainSeconds).toBe(5);
  });

  it('takes a value set, 0 included, in production as elsewhere', () => {
    expect(new HealthConfig({ NODE_ENV: 'production', SHUTDOWN_DRAIN_SECONDS: '0' }).shutdownDrainSeconds).toBe(0);
    expect(new HealthConfig({ NODE_ENV: 'production', SHUTDOWN_DRAIN_SECONDS: '12' }).shutdownDrainSeconds).toBe(12);
    expect(new HealthConfig({ SHUTDOWN_DRAIN_SECONDS: '3' }).shutdownDrainSeconds).toBe(3);
    expect(() => new HealthConfig({ NODE_ENV: 'production', SHUTDOWN_DRAIN_SECONDS: '5s' })).toThrow(/SHUTDOWN_DRAIN_SECONDS/);
  });
});
