// DPoP (RFC 9449) for the bench's clients: a P-256 key and the proofs it signs, made with node:crypto.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto';

const b64 = (value) => Buffer.from(value).toString('base64url');

export class DpopKey {
  /** `privateJwk`: a P-256 key (ES256 proofs) or an RSA key (RS256 proofs). */
  constructor(privateJwk) {
    this.privateJwk = privateJwk;
    this.key = createPrivateKey({ key: privateJwk, format: 'jwk' });
    const { kty, crv, x, y, n, e } = createPublicKey(this.key).export({ format: 'jwk' });
    this.rsa = kty === 'RSA';
    const jwk = this.rsa ? { kty, n, e } : { kty, crv, x, y };
    this.header = b64(JSON.stringify({ typ: 'dpop+jwt', alg: this.rsa ? 'RS256' : 'ES256', jwk }));
    this.prefix = randomUUID();
    this.count = 0;
  }

  static generate(alg = 'ES256') {
    const pair = alg === 'RS256' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return new DpopKey(pair.privateKey.export({ format: 'jwk' }));
  }

  /** A proof for one request: `htm`, `htu`, a `jti` never used before, and `ath` when an access token goes with it. */
  proof(htm, htu, accessToken) {
    const claims = { jti: `${this.prefix}.${this.count++}`, htm, htu, iat: Math.floor(Date.now() / 1000) };
    if (accessToken) claims.ath = createHash('sha256').update(accessToken).digest('base64url');
    const input = `${this.header}.${b64(JSON.stringify(claims))}`;
    const signature = sign('sha256', Buffer.from(input), this.rsa ? this.key : { key: this.key, dsaEncoding: 'ieee-p1363' });
    return `${input}.${signature.toString('base64url')}`;
  }
}
