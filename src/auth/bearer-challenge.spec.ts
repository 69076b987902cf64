import { describe, expect, it } from 'vitest';
import { bearerChallenge, quotedString, withResourceMetadata } from './bearer-challenge';

describe('bearerChallenge', () => {
  it('writes the auth-params in RFC 6750 order, each a quoted-string', () => {
    expect(bearerChallenge({ scope: 'orders:read orders:write', error: 'insufficient_scope' })).toBe(
      'Bearer error="insufficient_scope", scope="orders:read orders:write"',
    );
    expect(bearerChallenge({ realm: 'api' })).toBe('Bearer realm="api"');
    expect(bearerChallenge({})).toBe('Bearer');
  });

  it('escapes a double quote and a backslash, so a value cannot end its string early or add a parameter', () => {
    expect(quotedString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(bearerChallenge({ error: 'invalid_token', error_description: 'x", scope="admin' })).toBe(
      'Bearer error="invalid_token", error_description="x\\", scope=\\"admin"',
    );
  });
});

describe('withResourceMetadata', () => {
  const url = 'https://api.example.com/.well-known/oauth-protected-resource';

  it('adds the metadata URL last to a Bearer challenge, with or without parameters', () => {
    expect(withResourceMetadata('Bearer error="insufficient_scope", scope="a b"', url)).toBe(
      `Bearer error="insufficient_scope", scope="a b", resource_metadata="${url}"`,
    );
    expect(withResourceMetadata('Bearer', url)).toBe(`Bearer resource_metadata="${url}"`);
  });

  it('leaves a challenge of another scheme as it is', () => {
    expect(withResourceMetadata('DPoP error="invalid_dpop_proof", algs="ES256"', url)).toBe(
      `DPoP error="invalid_dpop_proof", algs="ES256", resource_metadata="${url}"`,
    );
    expect(withResourceMetadata('Basic realm="oauth"', url)).toBe('Basic realm="oauth"');
    expect(withResourceMetadata('Bearerish x="y"', url)).toBe('Bearerish x="y"');
  });
});
