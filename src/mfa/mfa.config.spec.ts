import { describe, expect, it } from 'vitest';
import { MfaConfig } from './mfa.config';

describe('MfaConfig (MFA_REQUIRED_ROLES)', () => {
  it('requires a second factor of administrators in production, and of nobody elsewhere, by default', () => {
    expect([...new MfaConfig({ NODE_ENV: 'production' }).requiredRoles]).toEqual(['admin']);
    expect([...new MfaConfig({}).requiredRoles]).toEqual([]);
    expect([...new MfaConfig({ NODE_ENV: 'development' }).requiredRoles]).toEqual([]);
    // Empty is unset: a copied .env.example keeps the production default.
    expect([...new MfaConfig({ NODE_ENV: 'production', MFA_REQUIRED_ROLES: ' ' }).requiredRoles]).toEqual(['admin']);
  });

  it('reads a comma-separated list of roles, or none', () => {
    const both = new MfaConfig({ MFA_REQUIRED_ROLES: 'admin, user' });
    expect(both.requires('admin')).toBe(true);
    expect(both.requires('user')).toBe(true);
    expect([...new MfaConfig({ NODE_ENV: 'production', MFA_REQUIRED_ROLES: 'none' }).requiredRoles]).toEqual([]);
    expect(new MfaConfig({ MFA_REQUIRED_ROLES: 'admin' }).requires('user')).toBe(false);
  });

  it('refuses a role that does not exist, naming it', () => {
    expect(() => new MfaConfig({ MFA_REQUIRED_ROLES: 'admin,root' })).toThrow(
      'MFA_REQUIRED_ROLES must list roles among user, admin (or be none), got "root"',
    );
  });
});
