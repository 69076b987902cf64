import { describe, expect, it } from 'vitest';
import { isRegisteredRedirectUri } from './redirect-uris';

describe('isRegisteredRedirectUri', () => {
  it('matches a registered URI exactly', () => {
    expect(isRegisteredRedirectUri(['https://app.example.com/cb'], 'https://app.example.com/cb')).toBe(true);
    expect(isRegisteredRedirectUri(['https://app.example.com/cb'], 'https://app.example.com/cb/')).toBe(false);
    expect(isRegisteredRedirectUri(['https://app.example.com/cb'], 'https://app.example.com:8443/cb')).toBe(false);
  });

  it('lets the port of an http loopback IP redirect vary (RFC 8252 7.3), nothing else', () => {
    const registered = ['http://127.0.0.1/callback', 'http://[::1]:8765/cb'];
    expect(isRegisteredRedirectUri(registered, 'http://127.0.0.1:51234/callback')).toBe(true);
    expect(isRegisteredRedirectUri(registered, 'http://[::1]:40000/cb')).toBe(true);
    expect(isRegisteredRedirectUri(registered, 'http://127.0.0.1:51234/other')).toBe(false);
    expect(isRegisteredRedirectUri(registered, 'http://127.0.0.1:51234/callback?x=1')).toBe(false);
    expect(isRegisteredRedirectUri(registered, 'https://127.0.0.1:51234/callback')).toBe(false);
    expect(isRegisteredRedirectUri(['http://localhost/callback'], 'http://localhost:51234/callback')).toBe(false);
    expect(isRegisteredRedirectUri(['https://app.example.com/cb'], 'not a uri')).toBe(false);
  });
});
