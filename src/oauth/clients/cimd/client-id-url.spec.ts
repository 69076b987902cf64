import { describe, expect, it } from 'vitest';
import { isClientIdUrl } from './client-id-url';

describe('isClientIdUrl', () => {
  it('takes https URLs with a path, a port or a query', () => {
    for (const url of [
      'https://app.example.com/client.json',
      'https://app.example.com:8443/oauth/client',
      'https://app.example.com/c?v=2',
    ]) {
      expect(isClientIdUrl(url), url).toBe(true);
    }
  });

  it('refuses what the draft rules out, and URLs not written as the parser writes them', () => {
    for (const url of [
      'http://app.example.com/client.json',
      'https://app.example.com',
      'https://app.example.com/',
      'https://app.example.com/client#x',
      'https://user:pw@app.example.com/client',
      'https://user@app.example.com/client',
      'https://app.example.com/a/../client',
      'https://app.example.com/a/./client',
      'https://app.example.com/a/%2e%2E/client',
      'https://app.example.com/a/%2e/client',
      'https://APP.example.com/client',
      'https://app.example.com:443/client',
      'https://app.example.com/cli ent',
      'https://app.example.com/client\n',
      `https://app.example.com/${'a'.repeat(250)}`,
      'urn:example:client',
    ]) {
      expect(isClientIdUrl(url), url).toBe(false);
    }
  });
});
