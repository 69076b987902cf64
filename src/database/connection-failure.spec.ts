import { describe, expect, it } from 'vitest';
import { databaseFailure, shownDatabaseUrl } from './connection-failure';

describe('databaseFailure', () => {
  it('names a refusal by the server with its reason, and the URL without the password', () => {
    const refused = Object.assign(new Error('password authentication failed for user "app"'), { severity: 'FATAL', code: '28P01' });
    expect(databaseFailure(refused, 'postgres://app:hunter2@db.internal:5432/app')).toBe(
      'the database at DATABASE_URL postgres://app@db.internal:5432/app refused the connection: password authentication failed for user "app"',
    );
  });

  it('leaves other errors to the caller', () => {
    expect(databaseFailure(new Error('boom'), 'postgres://app:pw@db/app')).toBeUndefined();
    expect(databaseFailure('not an error', undefined)).toBeUndefined();
  });

  it('shows a URL without credentials unchanged', () => {
    expect(shownDatabaseUrl('sqlite:./data/app.sqlite')).toBe('sqlite:./data/app.sqlite');
    expect(shownDatabaseUrl('postgres://app@db/app')).toBe('postgres://app@db/app');
  });
});
