import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import { uuidV7 } from '../../common/uuid-v7';
import type { AuditContext } from '../../audit/audit-events';
import { epochMs } from '../../database/sql';
import { type ConsumedCode, CodesRepository } from './codes.repository';
import type { Client } from '../entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthConfig } from '../oauth.config';
import { SessionsService } from '../interaction/sessions.service';
import { OAuthError } from '../oauth-error';
import { isRegisteredRedirectUri } from '../clients/redirect-uris';
import { ResourceIndicators } from '../resource-indicators';
import { PKCE_VALUE, hashSecret, randomSecret, s256 } from '../../crypto/secrets';
import { loginOf } from '../oidc/id-tokens';
import { type GrantRef, TokenIssuer, type TokenResponse } from './token-issuer.service';
import { LostAnswers } from './lost-answers';
import { isDatabaseUnavailable } from '../../database/database-errors';

export interface IssueCodeInput {
  client: Client;
  userId: string;
  /** The login of the session the code is issued in (epoch ms) and the session's `sid`, for ID tokens. */
  authTime: number;
  sid: string;
  /** How the person signed in, as the session keeps it (RFC 8176 values, space-separated), for ID tokens' `amr`. */
  amr: string | null;
  /** OpenID Connect `nonce` of the request, or null. */
  nonce: string | null;
  scope: string;
  /** RFC 8707 resources the request named (empty: none). */
  resources: string[];
  redirectUri: string | null;
  codeChallenge: string | null;
  /** RFC 9449 10: the DPoP key (thumbprint) whose proof the code's redemption needs, or null. */
  dpopJkt?: string | null;
  context: AuditContext;
}

/** What the authorization request decides of a code; the session supplies the rest. */
export type CodeRequest = Omit<IssueCodeInput, 'userId' | 'authTime' | 'sid' | 'amr'>;

export interface CodeExchangeInput {
  code?: string;
  redirectUri?: string;
  codeVerifier?: string;
  /** RFC 8707 `resource` values (space-separated) for this access token. */
  resource?: string;
  /** RFC 9449: the thumbprint of the key of the request's DPoP proof, which the tokens are bound to. */
  jkt?: string;
}

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/**
 * The authorization-code grant (RFC 6749 4.1 with RFC 7636 PKCE): a code starts a grant; redeeming it is one unit
 * of work whose conditional UPDATE picks the one winner, across requests and instances, and whose checks (below,
 * the same on both databases) decide whether it stores the refresh token and the event.
 */
@Injectable()
export class CodeGrantService {
  constructor(
    private readonly codes: CodesRepository,
    private readonly lifecycle: GrantRevocationService,
    private readonly issuer: TokenIssuer,
    private readonly config: OAuthConfig,
    private readonly sessions: SessionsService,
    private readonly resources: ResourceIndicators,
    private readonly audit: AuditService,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly lostAnswers: LostAnswers,
  ) {}

  /** Starts a grant and returns its authorization code (shown once; stored as a hash), with its `code.issued` event. */
  async issueCode(input: IssueCodeInput): Promise<string> {
    const now = Date.now();
    const code = randomSecret(32);
    const event = AuditService.event(
      {
        type: 'code.issued',
        actor: `user:${input.userId}`,
        userId: input.userId,
        clientId: input.client.id,
        details: { scope: input.scope },
      },
      input.context,
      now,
    );
    const params = {
      // Time-ordered: the grant's rows and index entries go in at the end of their indexes (see uuidV7).
      grantId: uuidV7(now),
      codeHash: hashSecret(code),
      userId: input.userId,
      clientId: input.client.id,
      scope: input.scope,
      resources: ResourceIndicators.stored(input.resources),
      redirectUri: input.redirectUri,
      codeChallenge: input.codeChallenge,
      dpopJkt: input.dpopJkt ?? null,
      nonce: input.nonce,
      authTime: input.authTime,
      sid: input.sid,
      amr: input.amr,
      now,
      grantExpiresAt: now + this.config.refreshTokenTtl * 1000,
      codeExpiresAt: now + this.config.authCodeTtl * 1000,
    };
    await this.codes.insertWithGrant(params, event);
    this.audit.log(event);
    return code;
  }

  /**
   * For a client that needs no consent (trusted): the code for the user of the login session a cookie names, or
   * undefined when there is no live session whose login was at `minAuthTime` (epoch ms; OpenID Connect `max_age`)
   * or later.
   */
  async issueCodeInSession(sessionSecret: string | undefined, input: CodeRequest, minAuthTime = 0): Promise<string | undefined> {
    const session = await this.sessions.current(sessionSecret);
    return session && session.authTime >= minAuthTime
      ? this.issueCode({ ...input, userId: session.userId, authTime: session.authTime, sid: session.sid, amr: session.amr })
      : undefined;
  }

  async exchange(client: Client, input: CodeExchangeInput, context: AuditContext): Promise<TokenResponse> {
    if (!input.code) throw new OAuthError('invalid_request', 'code is required.');
    if (input.codeVerifier !== undefined && !PKCE_VALUE.test(input.codeVerifier)) {
      throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 unreserved characters.');
    }
    // A resource this client may never name is refused before the code is spent (RFC 8707 2.2).
    const requestedResources = this.resources.atTokenEndpoint(client, input.resource);
    const binding = TokenIssuer.bindingFor(client, input.jkt);
    const issuing = client.grantTypes.includes('refresh_token') ? this.issuer.newRefreshToken() : undefined;
    const codeHash = hashSecret(input.code);
    const now = Date.now();
    const actor = `client:${client.id}` as const;
    const event = AuditService.event({ type: 'code.redeemed', actor, clientId: client.id }, context, now);
    let grant: GrantRef | undefined;
    let refused: OAuthError | undefined;
    // One unit: the code's consumption and, when its checks pass, the event with the refresh token (for a client
    // allowed the refresh-token grant). A refused code stays consumed; a replayed one has its grant revoked.
    const redemption = this.codes.redeemOnce(
      () =>
        this.transactions.withTransaction(async () => {
          const consumed =
            (await this.codes.consume({ now, codeHash, clientId: client.id })) ??
            (await this.presentedAgain(codeHash, client, context, now));
          if (typeof consumed === 'string') return consumed;
          try {
            grant = this.redeemed(consumed, client, input, requestedResources, now);
          } catch (error) {
            if (!(error instanceof OAuthError)) throw error;
            refused = error;
            return consumed;
          }
          event.userId = consumed.user_id;
          if (issuing) await this.issuer.storeRefreshToken(grant, now, event, consumed.scope, issuing, binding.refreshJkt);
          else await this.audit.write(event);
          return consumed;
        }),
      { now, codeHash, clientId: client.id, auditId: event.id },
    );
    const redeemed = await redemption.catch((error: unknown) => {
      // Committed or not, nobody knows until the database answers: its retry must not look like a replay.
      if (isDatabaseUnavailable(error)) this.lostAnswers.record('redemption', codeHash, now);
      throw error;
    });
    if (redeemed === 'unknown') throw invalidGrant('The authorization code is invalid.');
    if (redeemed === 'replayed') throw invalidGrant('The authorization code was already used.');
    if (refused) throw refused;
    // Read back after a lost answer: its checks passed (its event is stored), and they pass again on the same row.
    grant ??= this.redeemed(redeemed, client, input, requestedResources, now);
    event.userId = redeemed.user_id;
    this.audit.log(event);
    return this.issuer.respond(grant, redeemed.scope, issuing, binding.jkt);
  }

  /**
   * No unconsumed code of this client has the hash: unknown, or a code of another client (which this client cannot
   * burn), or presented a second time. A second time is the client's retry when the first answer was lost with the
   * database (see LostAnswers): then the consumed code, once, for the same checks; else whatever the first redemption
   * issued is revoked (RFC 6749 4.1.2).
   */
  private async presentedAgain(
    codeHash: string,
    client: Client,
    context: AuditContext,
    now: number,
  ): Promise<ConsumedCode | 'unknown' | 'replayed'> {
    const known = await this.codes.find(codeHash);
    if (!known || known.client_id !== client.id) return 'unknown';
    const consumedAt = epochMs(known.consumed_at, true);
    const retryUntil = epochMs(known.retry_until, true);
    const retry =
      consumedAt !== null &&
      ((retryUntil !== null && retryUntil > now) || (retryUntil === null && this.lostAnswers.holds('redemption', codeHash, consumedAt)));
    const again = retry ? await this.codes.takeRetry(codeHash, client.id, consumedAt, now) : undefined;
    if (again) return again;
    const replayed = { type: 'code.replayed', actor: `client:${client.id}`, userId: known.user_id, clientId: client.id } as const;
    await this.lifecycle.revokeGrant(known.grant_id, AuditService.event(replayed, context, now));
    return 'replayed';
  }

  /**
   * The grant a consumed code yields, after the checks of its redemption (RFC 6749 4.1.3, RFC 7636 4.6, RFC 8707):
   * a live grant and code, the redirect URI of the request, the PKCE verifier, resources within the grant's.
   * Throws the token endpoint's error otherwise.
   */
  private redeemed(row: ConsumedCode, client: Client, input: CodeExchangeInput, requestedResources: string[], now: number): GrantRef {
    const grantExpiresAt = epochMs(row.grant_expires_at, true);
    if (grantExpiresAt === null || row.grant_revoked_at !== null || grantExpiresAt <= now) {
      throw invalidGrant('The grant is no longer valid.');
    }
    // Live when it was redeemed (a retry after a lost answer comes later).
    if (epochMs(row.expires_at) <= epochMs(row.consumed_at)) throw invalidGrant('The authorization code has expired.');
    if (row.redirect_uri !== null) {
      if (input.redirectUri === undefined) throw new OAuthError('invalid_request', 'redirect_uri is required.');
      if (input.redirectUri !== row.redirect_uri) throw invalidGrant('redirect_uri does not match the authorization request.');
    } else if (input.redirectUri !== undefined && !isRegisteredRedirectUri(client.redirectUris, input.redirectUri)) {
      throw invalidGrant('redirect_uri does not match the authorization request.');
    }
    // RFC 9449 10: a code bound to a key is redeemed only with a proof of that key.
    if (row.dpop_jkt !== null && row.dpop_jkt !== input.jkt) {
      throw invalidGrant('This authorization code is bound to a key: present a DPoP proof of that key.');
    }
    if (row.code_challenge !== null) {
      if (input.codeVerifier === undefined) throw new OAuthError('invalid_request', 'code_verifier is required.');
      if (s256(input.codeVerifier) !== row.code_challenge) throw invalidGrant('code_verifier does not match the code challenge.');
    } else if (input.codeVerifier !== undefined) {
      throw new OAuthError('invalid_request', 'code_verifier was sent for a code issued without a code challenge.');
    }
    // A resource outside the authorization is refused.
    const audience = this.resources.audienceFor(requestedResources, row.grant_resources);
    return {
      id: row.grant_id,
      userId: row.user_id,
      clientId: client.id,
      expiresAt: grantExpiresAt,
      audience,
      login: loginOf(row.grant_auth_time, row.grant_sid, row.nonce, row.grant_amr),
    };
  }
}
