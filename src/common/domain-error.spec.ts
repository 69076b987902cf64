import { describe, expect, it } from 'vitest';
import { CommonError, DomainError, type ErrorCode, domainErrorDefinition } from './domain-error';

describe('error codes', () => {
  it('are the codes a module defined, with their status; a code no module defined does not compile', () => {
    const error = new DomainError(CommonError.DatabaseUnavailable, 'the database is away');
    expect(error.code).toBe('database-unavailable');
    expect(domainErrorDefinition(error.code)).toEqual({ code: 'database-unavailable', status: 503 });
    // `npm test` type-checks this file first: were a plain string accepted, the directive below would fail it.
    // @ts-expect-error -- a typo of a code is not an ErrorCode
    const typo: ErrorCode = 'database-unavialable';
    expect(domainErrorDefinition(typo)).toBeUndefined();
  });
});
