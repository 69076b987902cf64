import { type KeyObject, generateKeyPairSync } from 'node:crypto';
import { JwtSecretRequestType, JwtService } from '@nestjs/jwt';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { signingKeyProvider } from './token-signing';

const pair = () => generateKeyPairSync('rsa', { modulusLength: 2048 });

describe('signingKeyProvider', () => {
  const first = pair();
  const second = pair();
  const keys = new Map<string, KeyObject>([
    ['kid-1', first.privateKey],
    ['kid-2', second.privateKey],
  ]);
  const jwt = new JwtService({ secretOrKeyProvider: signingKeyProvider({ privateKeyOf: (kid) => keys.get(kid) }) });
  const sign = (kid: string) => jwt.sign({ sub: 'u1', iat: 1 }, { algorithm: 'RS256', header: { alg: 'RS256', typ: 'at+jwt', kid } });

  it('signs with the private key of the kid in the header, and only with that one', async () => {
    const token = sign('kid-2');
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'RS256', typ: 'at+jwt', kid: 'kid-2' });
    const { payload } = await compactVerify(token, second.publicKey);
    expect(JSON.parse(Buffer.from(payload).toString('utf8'))).toEqual({ sub: 'u1', iat: 1 });
    await expect(compactVerify(token, first.publicKey)).rejects.toThrow();
  });

  it('refuses a kid it has no private key for, and a header without a kid', () => {
    expect(() => sign('kid-3')).toThrow('no private key for kid kid-3');
    expect(() => jwt.sign({ sub: 'u1' }, { algorithm: 'RS256' })).toThrow('no private key for kid undefined');
  });

  it('gives no key to verify with', () => {
    const provider = signingKeyProvider({ privateKeyOf: (kid) => keys.get(kid) })!;
    expect(() => provider(JwtSecretRequestType.VERIFY, 'a.b.c', {})).toThrow('this JwtService signs only');
  });
});
