import { describe, expect, it } from 'vitest';
import { PKCE_VALUE, hashSecret, randomSecret, s256, safeEqual } from './secrets';

describe('secrets', () => {
  it('computes the S256 challenge of RFC 7636 appendix B', () => {
    expect(s256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  });

  it('makes secrets of the requested entropy, URL-safe and different each time', () => {
    const a = randomSecret(32);
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomSecret(32)).not.toBe(a);
    expect(randomSecret(16)).toHaveLength(22);
  });

  it('never hands out the same bytes twice, across refills of its pool of random bytes', () => {
    // 600 secrets of 32 bytes span five 4 KB draws; any reuse of a slice would repeat a secret.
    const secrets = Array.from({ length: 600 }, () => randomSecret(32));
    expect(new Set(secrets).size).toBe(600);
    expect(randomSecret(5000)).toHaveLength(Math.ceil((5000 * 4) / 3));
  });

  it('stores a secret as its SHA-256 and compares in constant time', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
  });

  it('accepts only 43 to 128 unreserved characters as a PKCE value', () => {
    expect(PKCE_VALUE.test('a'.repeat(43))).toBe(true);
    expect(PKCE_VALUE.test('a'.repeat(128))).toBe(true);
    expect(PKCE_VALUE.test('a'.repeat(42))).toBe(false);
    expect(PKCE_VALUE.test('a'.repeat(129))).toBe(false);
    expect(PKCE_VALUE.test(`${'a'.repeat(42)}+`)).toBe(false);
  });
});
