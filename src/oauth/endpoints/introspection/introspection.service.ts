import { Injectable } from '@nestjs/common';
import { AccessTokenVerifier } from '../../../auth/access-token-verifier.service';
import type { ActClaim } from '../../../auth/principal';
import { RevokedGrantsService } from '../../../auth/revoked-grants.service';
import { AppConfig } from '../../../config/app-config';
import type { Client } from '../../entities/client.entity';
import { RefreshTokensRepository } from '../../grants/refresh-tokens.repository';
import { GrantRevocationService } from '../../grants/grant-revocation.service';
import { hashSecret } from '../../../crypto/secrets';

export type Introspection =
  | { active: false }
  | {
      active: true;
      scope: string;
      client_id: string;
      sub: string;
      exp: number;
      iat: number;
      iss: string;
      aud: string | string[];
      token_type: 'Bearer' | 'DPoP' | 'refresh_token';
      /** RFC 9449 6.2: the key a DPoP-bound token (or a public client's refresh token) is bound to. */
      cnf?: { jkt: string };
      /** RFC 8693 4.1 (a claim of the token and of its introspection): the actor of an exchanged access token. */
      act?: ActClaim;
      /** RFC 9470 6: the level and time of the person's sign-in, as the access token carries them. */
      acr?: string;
      auth_time?: number;
    };

/** RFC 7662 for the calling client's own tokens; everything else is inactive and says nothing more. */
@Injectable()
export class IntrospectionService {
  constructor(
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly accessTokens: AccessTokenVerifier,
    private readonly revoked: RevokedGrantsService,
    private readonly lifecycle: GrantRevocationService,
    private readonly config: AppConfig,
  ) {}

  async introspect(client: Client, token: string): Promise<Introspection> {
    const now = Date.now();
    const refresh = token.includes('.') ? null : await this.refreshTokens.findStored(hashSecret(token));
    if (refresh) {
      if (refresh.clientId !== client.id || refresh.rotatedAt !== null || refresh.expiresAt <= now) return { active: false };
      if (!(await this.lifecycle.isLive(refresh.grantId, now))) return { active: false };
      return {
        active: true,
        scope: refresh.scope,
        client_id: refresh.clientId,
        sub: refresh.userId,
        exp: Math.floor(refresh.expiresAt / 1000),
        iat: Math.floor(refresh.createdAt / 1000),
        iss: this.config.issuer,
        aud: this.config.audience,
        token_type: 'refresh_token',
        ...(refresh.dpopJkt ? { cnf: { jkt: refresh.dpopJkt } } : {}),
      };
    }
    const access = await this.accessTokens.verifySignatureAndClaims(token, { anyAudience: true }).catch(() => undefined);
    if (!access || access.clientId !== client.id || access.exp * 1000 <= now) return { active: false };
    if (this.revoked.isTokenRevoked(access)) return { active: false };
    // A client-credentials token has no stored grant: the revoked list alone decides.
    if (access.kind === 'user' && !(await this.lifecycle.isLive(access.grantId, now))) return { active: false };
    return {
      active: true,
      scope: access.scope,
      client_id: access.clientId,
      sub: access.sub,
      exp: access.exp,
      iat: access.iat,
      iss: this.config.issuer,
      aud: access.aud,
      token_type: access.jkt ? 'DPoP' : 'Bearer',
      ...(access.act ? { act: access.act } : {}),
      ...(access.acr !== undefined ? { acr: access.acr } : {}),
      ...(access.authTime !== undefined ? { auth_time: access.authTime } : {}),
      ...(access.jkt ? { cnf: { jkt: access.jkt } } : {}),
    };
  }
}
