import { describe, expect, it } from 'vitest';
import { safeReturnTo } from './return-to';

describe('safeReturnTo', () => {
  it('keeps a relative path on this server with its query', () => {
    expect(safeReturnTo('/authorize?client_id=a&scope=users%3Aread')).toBe('/authorize?client_id=a&scope=users%3Aread');
  });

  it.each([
    'https://evil.example/',
    '//evil.example/x',
    '/\\evil.example',
    '\\\\evil.example',
    'javascript:alert(1)',
    '/%0d%0aSet-Cookie:x',
    '/a\nb',
    'authorize',
    '',
    undefined,
    ['/a', '/b'],
  ])('sends %j to /', (value) => {
    const result = safeReturnTo(value);
    expect(result === '/' || !/^\/\/|^\/\\|[\r\n]/.test(result)).toBe(true);
    if (typeof value !== 'string' || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\') || value.includes('\n')) {
      expect(result).toBe('/');
    }
  });
});
