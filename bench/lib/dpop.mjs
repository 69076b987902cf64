// DPoP (RFC 9449) for the bench's clients: a P-256 key and the proofs it signs, made with node:crypto.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto';

const b64 = (value) => Buffer.from(value).toString('base64url');

export class DpopKey {
  constructor(privateJwk) {
    this.privateJwk = privateJwk;
    this.key = createPrivateKey({ key: privateJwk, format: 'jwk' });
    const { kty, crv, x, y } = createPublicKey(this.key).export({ format: 'jwk' });
    this.header = b64(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } }));
    this.prefix = randomUUID();
    this.count = 0;
  }

  static generate() {
    return new DpopKey(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }));
  }

  /** A proof for one request: `htm`, `htu`, a `jti` never used before, and `ath` when an access token goes with it. */
  proof(htm, htu, accessToken) {
    const claims = { jti: `${this.prefix}.${this.count++}`, htm, htu, iat: Math.floor(Date.now() / 1000) };
    if (accessToken) claims.ath = createHash('sha256').update(accessToken).digest('base64url');
    const input = `${this.header}.${b64(JSON.stringify(claims))}`;
    return `${input}.${sign('sha256', Buffer.from(input), { key: this.key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  }
}
