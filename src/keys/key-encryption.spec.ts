import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeyEncryption, KeyEncryptionError } from './key-encryption';
import { KeysConfig } from './keys.config';

const JWK = JSON.stringify({ kty: 'RSA', n: 'modulus', e: 'AQAB', d: 'private-exponent' });

describe('KeyEncryption', () => {
  const kek = randomBytes(32);
  const sealer = new KeyEncryption(kek);

  it('seals with AES-256-GCM under the KEK: the stored value names the KEK and holds no part of the key', () => {
    const sealed = sealer.seal('kid-1', JWK);
    expect(sealed).toMatch(/^kek1\.[0-9a-f]{16}\.[\w-]{16}\.[\w-]+\.[\w-]{22}$/);
    expect(KeyEncryption.sealedWith(sealed)).toBe(sealer.id);
    expect(sealed).not.toContain('private-exponent');
    expect(sealer.seal('kid-1', JWK)).not.toBe(sealed); // a fresh IV each time
    expect(sealer.open('kid-1', sealed)).toBe(JWK);
  });

  it('refuses a sealed key without the KEK, under another KEK, on another kid, or altered', () => {
    const sealed = sealer.seal('kid-1', JWK);
    expect(() => new KeyEncryption(undefined).open('kid-1', sealed)).toThrow(/KEY_ENCRYPTION_KEY is not set/);
    expect(() => new KeyEncryption(randomBytes(32)).open('kid-1', sealed)).toThrow(/another key-encryption key/);
    expect(() => sealer.open('kid-2', sealed)).toThrow(KeyEncryptionError);
    const parts = sealed.split('.');
    const ciphertext = Buffer.from(parts[3], 'base64url');
    ciphertext[0] ^= 1;
    parts[3] = ciphertext.toString('base64url');
    expect(() => sealer.open('kid-1', parts.join('.'))).toThrow(/does not decrypt/);
  });

  it('reads plain keys (stored before a KEK was set) and stores plain without a KEK', () => {
    expect(sealer.open('kid-1', JWK)).toBe(JWK);
    expect(new KeyEncryption(undefined).seal('kid-1', JWK)).toBe(JWK);
  });
});

describe('KeysConfig', () => {
  it('takes 32 bytes as base64 or hex, and requires a key in production', () => {
    const bytes = randomBytes(32);
    expect(new KeysConfig({ KEY_ENCRYPTION_KEY: bytes.toString('base64') }).keyEncryptionKey).toEqual(bytes);
    expect(new KeysConfig({ KEY_ENCRYPTION_KEY: bytes.toString('hex') }).keyEncryptionKey).toEqual(bytes);
    expect(new KeysConfig({}).keyEncryptionKey).toBeUndefined();
    expect(() => new KeysConfig({ NODE_ENV: 'production' })).toThrow(/KEY_ENCRYPTION_KEY is required/);
    for (const bad of ['short', randomBytes(16).toString('base64'), `${bytes.toString('hex')}00`, 'x'.repeat(44)]) {
      expect(() => new KeysConfig({ KEY_ENCRYPTION_KEY: bad })).toThrow(/KEY_ENCRYPTION_KEY must be 32 bytes/);
    }
  });
});
