import { acrOf } from '../../auth/acr';
import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { AppConfig } from '../../config/app-config';
import { epochMs } from '../../database/sql';
import { SigningKeysService } from '../../keys/signing-keys.service';
import { signedWith } from '../grants/token-signing';

/**
 * The login behind a grant, for its ID tokens: the time of the login (epoch ms), the session's `sid`, how the
 * person signed in (RFC 8176 `amr` values, when known) and — when the tokens come from a code — the authorization
 * request's `nonce`.
 */
export interface LoginRef {
  authTime: number;
  sid: string | null;
  nonce?: string | null;
  amr?: string[];
}

/** The {@link LoginRef} of a grant's stored columns; undefined for a grant from before OpenID Connect. */
export function loginOf(
  authTime: string | number | null,
  sid: string | null,
  nonce?: string | null,
  amr?: string | null,
): LoginRef | undefined {
  const at = epochMs(authTime, true);
  if (at === null) return undefined;
  return amr ? { authTime: at, sid, nonce, amr: amr.split(' ') } : { authTime: at, sid, nonce };
}

/** Mints the ID tokens that come with a grant's access tokens when its scope has `openid`. */
@Injectable()
export class IdTokenIssuer {
  constructor(
    private readonly jwt: JwtService,
    private readonly keys: SigningKeysService,
    private readonly config: AppConfig,
  ) {}

  /**
   * An OpenID Connect ID token (Core 1.0 2, 3.1.3.6): RS256 with the active key, for the client (`aud`), with the
   * login's `auth_time`, `sid` and `amr`, the request's `nonce` when there was one, and `at_hash` of the access token it
   * comes with. The profile and email claims are not in it: UserInfo answers them (Core 5.4).
   */
  mint(grant: { userId: string; clientId: string }, login: LoginRef, accessToken: string): string {
    const key = this.keys.activeKey();
    const iat = Math.floor(Date.now() / 1000);
    const digest = createHash('sha256').update(accessToken).digest();
    return this.jwt.sign(
      {
        iss: this.config.issuer,
        sub: grant.userId,
        aud: grant.clientId,
        auth_time: Math.floor(login.authTime / 1000),
        ...(login.nonce ? { nonce: login.nonce } : {}),
        ...(login.sid ? { sid: login.sid } : {}),
        ...(login.amr ? { amr: login.amr, acr: acrOf(login.amr) } : {}),
        at_hash: digest.subarray(0, digest.length / 2).toString('base64url'),
        iat,
        exp: iat + this.config.accessTokenTtl,
      },
      signedWith(key.kid, 'JWT'),
    );
  }
}
