import { Injectable } from '@nestjs/common';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { AppConfig } from '../../config/app-config';
import { SigningKeysService } from '../../keys/signing-keys.service';

/** What an `id_token_hint` says of the login it came from. */
export interface IdTokenHint {
  sub: string;
  /** The client it was issued to (its `aud`). */
  clientId: string;
  sid: string | null;
}

/**
 * What an `id_token_hint` (at /authorize and /end-session) turned out to be: an ID token of this server, one signed
 * by a key this server no longer holds (`stale`: it may have been ours, it cannot be checked any more), or not
 * one of ours at all (`invalid`).
 */
export type HintCheck = { kind: 'valid'; hint: IdTokenHint } | { kind: 'stale' } | { kind: 'invalid' };

/** Longer than any ID token of this server (a few hundred bytes of claims and an RS256 signature). */
const MAX_HINT_LENGTH = 8192;

/** Checks `id_token_hint` values: this server's signature and issuer, whatever the expiry. */
@Injectable()
export class IdTokenHints {
  constructor(
    private readonly config: AppConfig,
    private readonly keys: SigningKeysService,
  ) {}

  /**
   * An ID token of this server (RS256, `typ: JWT`, a key of this server, this issuer), whatever its expiry: a
   * client may name a person by a token long past its lifetime (Core 3.1.2.1, RP-Initiated Logout 1.0 section 2).
   */
  async check(token: string): Promise<HintCheck> {
    if (token.length > MAX_HINT_LENGTH) return { kind: 'invalid' };
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return { kind: 'invalid' };
    }
    if (typeof kid !== 'string' || kid === '') return { kind: 'invalid' };
    const key = await this.keys.verificationKey(kid);
    // A key id this server does not (or no longer) publish: retired after a rotation, or never ours.
    if (!key) return { kind: 'stale' };
    try {
      const { payload, protectedHeader } = await compactVerify(token, key, { algorithms: ['RS256'] });
      // An access token (typ at+jwt) is no ID token.
      if (protectedHeader.typ !== 'JWT') return { kind: 'invalid' };
      const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
      const aud = Array.isArray(claims.aud) && claims.aud.length === 1 ? claims.aud[0] : claims.aud;
      if (claims.iss !== this.config.issuer || typeof claims.sub !== 'string' || typeof aud !== 'string') return { kind: 'invalid' };
      return { kind: 'valid', hint: { sub: claims.sub, clientId: aud, sid: typeof claims.sid === 'string' ? claims.sid : null } };
    } catch {
      return { kind: 'invalid' };
    }
  }
}
