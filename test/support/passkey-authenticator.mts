import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/**
 * A passkey authenticator in software, for the tests and the bench: it creates a P-256 credential (attestation
 * `none`) and signs assertions the way a platform authenticator does (WebAuthn Level 3, §6.1 and §6.5), so that the
 * service's real verification (@simplewebauthn/server) checks them. Everything a browser would decide (the origin,
 * the relying-party id) and the authenticator's flags can be set wrong on purpose. Only erasable TypeScript: the
 * bench imports this file with Node's type stripping.
 */

/** What a browser posts after navigator.credentials.create / get, as JSON. */
export interface CredentialJson {
  id: string;
  rawId: string;
  type: 'public-key';
  response: Record<string, string | string[]>;
  clientExtensionResults: Record<string, never>;
  authenticatorAttachment: 'platform';
}

export interface AuthenticatorOptions {
  /** The page's origin the browser reports (default: the relying party's https origin). */
  origin?: string;
  /** The relying-party id hashed into the authenticator data (default: the options' rpId). */
  rpId?: string;
  /** Whether the authenticator verified the person (flag UV; default true). */
  userVerified?: boolean;
  /** A synced passkey (flags BE and BS), as a password manager's; default false (bound to this authenticator). */
  synced?: boolean;
}

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_BE = 0x08;
const FLAG_BS = 0x10;
const FLAG_AT = 0x40;

export class SoftAuthenticator {
  readonly credentialId: Buffer;
  private readonly privateKey: KeyObject;
  private readonly cosePublicKey: Buffer;
  /** The user handle the credential was created for (base64url), returned with every assertion. */
  userHandle = '';
  signCount = 0;

  /** `idBytes`: the credential id's length (authenticators use 16 to 64; WebAuthn caps it at 1,023). */
  constructor(idBytes = 32) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    // COSE_Key: kty EC2 (2), alg ES256 (-7), crv P-256 (1), x, y.
    this.cosePublicKey = cbor(
      new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    this.credentialId = randomBytes(idBytes);
  }

  get id(): string {
    return this.credentialId.toString('base64url');
  }

  /** The answer to creation options (PublicKeyCredentialCreationOptionsJSON). */
  register(options: { challenge: string; rp: { id?: string }; user: { id: string } }, opts: AuthenticatorOptions = {}): CredentialJson {
    const rpId = opts.rpId ?? options.rp.id!;
    this.userHandle = options.user.id;
    const clientData = this.clientData('webauthn.create', options.challenge, opts.origin ?? `https://${rpId}`);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, this.cosePublicKey]);
    const authData = Buffer.concat([this.authenticatorData(rpId, opts, FLAG_AT), attested]);
    const attestationObject = cbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    return this.credential({
      clientDataJSON: clientData.toString('base64url'),
      attestationObject: attestationObject.toString('base64url'),
      transports: ['internal'],
    });
  }

  /** The answer to request options (PublicKeyCredentialRequestOptionsJSON): an assertion signed by this key. */
  authenticate(options: { challenge: string; rpId?: string }, opts: AuthenticatorOptions = {}): CredentialJson {
    const rpId = opts.rpId ?? options.rpId!;
    this.signCount++;
    const clientData = this.clientData('webauthn.get', options.challenge, opts.origin ?? `https://${rpId}`);
    const authData = this.authenticatorData(rpId, opts, 0);
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientData).digest()]), this.privateKey);
    return this.credential({
      clientDataJSON: clientData.toString('base64url'),
      authenticatorData: authData.toString('base64url'),
      signature: signature.toString('base64url'),
      userHandle: this.userHandle,
    });
  }

  private clientData(type: string, challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  private authenticatorData(rpId: string, opts: AuthenticatorOptions, extraFlags: number): Buffer {
    let flags = FLAG_UP | extraFlags;
    if (opts.userVerified ?? true) flags |= FLAG_UV;
    if (opts.synced) flags |= FLAG_BE | FLAG_BS;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.signCount);
    return Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([flags]), counter]);
  }

  private credential(response: Record<string, string | string[]>): CredentialJson {
    return { id: this.id, rawId: this.id, type: 'public-key', response, clientExtensionResults: {}, authenticatorAttachment: 'platform' };
  }
}

/** CBOR (RFC 8949) of what attestation objects and COSE keys hold: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
    if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(n, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const text = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, text.length), text]);
  }
  if (value instanceof Map) {
    const parts = [head(5, value.size)];
    for (const [k, v] of value) parts.push(cbor(k), cbor(v));
    return Buffer.concat(parts);
  }
  throw new Error(`cbor: cannot encode ${typeof value}`);
}
