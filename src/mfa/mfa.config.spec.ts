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

  it("binds passkeys to the issuer's host and origin by default, or to a company domain and its origins", () => {
    expect(new MfaConfig({}).relyingParty('https://login.example.com/auth')).toEqual({
      rpId: 'login.example.com',
      origins: ['https://login.example.com'],
    });
    const company = new MfaConfig({ WEBAUTHN_RP_ID: 'Example.com', WEBAUTHN_ORIGINS: 'https://login.example.com, https://example.com/' });
    expect(company.relyingParty('https://login.example.com')).toEqual({
      rpId: 'example.com',
      origins: ['https://login.example.com', 'https://example.com'],
    });
  });

  it('refuses a relying-party id that is not a domain, an origin with a path, and an origin outside the domain', () => {
    expect(() => new MfaConfig({ WEBAUTHN_RP_ID: 'https://example.com' })).toThrow(
      'WEBAUTHN_RP_ID must be a domain name such as example.com (no scheme, port or path), got "https://example.com"',
    );
    expect(() => new MfaConfig({ WEBAUTHN_ORIGINS: 'https://example.com/login' })).toThrow(
      'WEBAUTHN_ORIGINS must list origins such as https://login.example.com (no path), got "https://example.com/login"',
    );
    expect(() => new MfaConfig({ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://example.org' })).toThrow(
      'the origin https://example.org is not under WEBAUTHN_RP_ID example.com',
    );
    // Without WEBAUTHN_ORIGINS, the issuer's origin must be under it.
    expect(() => new MfaConfig({ WEBAUTHN_RP_ID: 'example.com', ISSUER: 'https://notexample.com' })).toThrow(
      'the origin https://notexample.com is not under WEBAUTHN_RP_ID example.com',
    );
  });
});
