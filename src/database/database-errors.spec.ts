import { QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './database-errors';

describe('isDatabaseUnavailable', () => {
  it('takes a unit whose lost connection TypeORM released for an unavailable database (503)', () => {
    expect(isDatabaseUnavailable(new QueryRunnerAlreadyReleasedError())).toBe(true);
  });

  it('takes a lost connection under a failed query for one, and a failed statement for none', () => {
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], Object.assign(new Error('x'), { code: '57P01' })))).toBe(true);
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], Object.assign(new Error('x'), { code: '23505' })))).toBe(false);
  });
});
