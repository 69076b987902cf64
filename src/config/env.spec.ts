import { describe, expect, it } from 'vitest';
import { ConfigError, type Env, positiveInt, problemsOf, wholeSeconds } from './env';

/** A module's configuration as modules write theirs: the constructor stops at the first bad variable. */
class SampleConfig {
  static readonly variables = ['SAMPLE_TTL', 'SAMPLE_SIZE', 'SAMPLE_MODE', 'SAMPLE_TOKEN'] as const;
  readonly ttl: number;
  readonly size: number;
  constructor(env: Env) {
    this.ttl = wholeSeconds(env, 'SAMPLE_TTL', 60);
    this.size = positiveInt(env, 'SAMPLE_SIZE', 10);
    const mode = env.SAMPLE_MODE ?? 'off';
    if (mode !== 'off' && mode !== 'token') throw new ConfigError(`SAMPLE_MODE must be off or token, got "${mode}"`);
    if (env.SAMPLE_TOKEN !== undefined && env.SAMPLE_TOKEN.length < 32)
      throw new ConfigError('SAMPLE_TOKEN must be at least 32 characters');
    if (mode === 'token' && !env.SAMPLE_TOKEN) throw new ConfigError('SAMPLE_MODE=token needs SAMPLE_TOKEN');
  }
}

describe('problemsOf (one module of validateConfiguration)', () => {
  it('names every bad variable of the module, in the order the module reads them, not only the first', () => {
    expect(problemsOf(SampleConfig, { SAMPLE_TTL: 'soon', SAMPLE_SIZE: '0', SAMPLE_MODE: 'maybe' })).toEqual([
      'SAMPLE_TTL must be a whole number of seconds, got "soon"',
      'SAMPLE_SIZE must be a positive whole number, got "0"',
      'SAMPLE_MODE must be off or token, got "maybe"',
    ]);
  });

  it('has nothing to say about a good environment', () => {
    expect(problemsOf(SampleConfig, { SAMPLE_TTL: '5', SAMPLE_MODE: 'token', SAMPLE_TOKEN: 'x'.repeat(32) })).toEqual([]);
  });

  it('does not add a complaint that only setting the bad variable aside caused', () => {
    // Once the short token is set aside, the module would say the mode needs one: that is the same problem.
    expect(problemsOf(SampleConfig, { SAMPLE_MODE: 'token', SAMPLE_TOKEN: 'short' })).toEqual([
      'SAMPLE_TOKEN must be at least 32 characters',
    ]);
  });
});
