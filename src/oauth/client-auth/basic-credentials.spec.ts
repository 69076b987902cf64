import { describe, expect, it } from 'vitest';
import { parseBasicCredentials } from './basic-credentials';

const basic = (pair: string) => `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;

describe('parseBasicCredentials (RFC 6749 2.3.1: id and secret form-URL-encoded)', () => {
  it('takes plain id and secret as they are', () => {
    expect(parseBasicCredentials(basic('client-1:s3cret_-.~'))).toEqual({ id: 'client-1', secret: 's3cret_-.~' });
  });

  it('decodes percent escapes and + as a space, in the id and in the secret', () => {
    expect(parseBasicCredentials(basic('my%20client:a%3Ab+c%2Bd'))).toEqual({ id: 'my client', secret: 'a:b c+d' });
  });

  it('splits at the first colon: the secret may hold more', () => {
    expect(parseBasicCredentials(basic('id:se:cret'))).toEqual({ id: 'id', secret: 'se:cret' });
  });

  it('answers null for a Basic header that is malformed: no colon, a broken escape, characters outside base64', () => {
    expect(parseBasicCredentials(basic('nocolon'))).toBeNull();
    expect(parseBasicCredentials(basic('id:%E0%A4%A'))).toBeNull();
    expect(parseBasicCredentials('Basic not*base64')).toBeNull();
  });

  it('answers undefined for no header or another scheme', () => {
    expect(parseBasicCredentials(undefined)).toBeUndefined();
    expect(parseBasicCredentials('Bearer abc')).toBeUndefined();
  });
});
