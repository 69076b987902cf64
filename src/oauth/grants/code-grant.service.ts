import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import { uuidV7 } from '../../common/uuid-v7';
import type { AuditContext } from '../../audit/audit-events';
import { epochMs } from '../../database/sql';
import { type ConsumedCode, CodesRepository, type StoredCode } from './codes.repository';
import type { Client } from '../entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthConfig } from '../oauth.config';
import { SessionsService } from '../interaction/sessions.service';
import { OAuthError } from '../oauth-error';
import { isRegisteredRedirectUri } from '../clients/redirect-uris';
import { ResourceIndicators } from '../resource-indicators';
import { PKCE_VALUE, hashSecret, randomSecret, s256 } from '../../crypto/secrets';
import { loginOf } from '../oidc/id-tokens';
import { type GrantRef, type RefreshTokenSecret, TokenIssuer, type TokenResponse } from './token-issuer.service';
import type { AuditEvent } from '../../audit/audit-event.entity';
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

/** A code's presentation at the token endpoint, as the steps of its exchange share it. */
interface Presentation {
  client: Client;
  input: CodeExchangeInput;
  requestedResources: string[];
  issuing: RefreshTokenSecret | undefined;
  binding: ReturnType<typeof TokenIssuer.bindingFor>;
  event: AuditEvent;
  codeHash: string;
  context: AuditContext;
  now: number;
}

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

/**
 * The authorization-code grant (RFC 6749 4.1 with RFC 7636 PKCE): a code starts a grant. Its redemption reads the
 * code, runs the checks (below, the same on both databases), then writes: a conditional UPDATE picks the one
 * winner across requests and instances, and only the winner's refresh token and event are stored with it.
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
    private readonly lostAnswers: LostAnswers,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
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
    const found = await this.codes.find(codeHash, client.id);
    // Unknown, or a code of another client (which this client cannot burn).
    if (!found) throw invalidGrant('The authorization code is invalid.');
    const presentation = { client, input, requestedResources, issuing, binding, event, codeHash, context, now };
    if (found.consumed_at !== null) return this.presentedAgain(found, presentation);
    // The checks first, on the row as read; then the code is consumed, once, and only the winner stores the refresh
    // token (for a client allowed the refresh-token grant) and the event with it.
    const row = { ...found, consumed_at: now };
    let grant: GrantRef;
    try {
      grant = this.redeemed(row, client, input, requestedResources, now);
    } catch (error) {
      // A refused code is spent; one another request consumed in between makes this a presentation again.
      if (!(error instanceof OAuthError) || (await this.codes.consume(codeHash, client.id, now))) throw error;
      return this.presentedAgain(await this.codes.find(codeHash, client.id), presentation);
    }
    event.userId = row.user_id;
    const refreshToken = issuing && TokenIssuer.refreshTokenOf(grant, row.scope, issuing, binding.refreshJkt);
    const won = await this.codes.redeem({ codeHash, clientId: client.id, now, event, refreshToken }).catch((error: unknown) => {
      // Committed or not, nobody knows until the database answers: its retry must not look like a replay.
      if (isDatabaseUnavailable(error)) this.lostAnswers.record('redemption', codeHash, now);
      throw error;
    });
    if (won) return this.respond(grant, row.scope, issuing, binding.jkt, event);
    // Another request consumed it in between: this one is a presentation again.
    return this.presentedAgain(await this.codes.find(codeHash, client.id), presentation);
  }

  private respond(grant: GrantRef, scope: string, issuing: RefreshTokenSecret | undefined, jkt: string | undefined, event: AuditEvent) {
    this.audit.log(event);
    return this.issuer.respond(grant, scope, issuing, jkt);
  }

  /**
   * A consumed code presented again. It is the client's retry when the first answer was lost with the database
   * (see LostAnswers): then, after the same checks, tokens of the same grant, once (the retry taken in one unit with
   * the refresh token and the event); else whatever the first redemption issued is revoked (RFC 6749 4.1.2).
   */
  private async presentedAgain(known: StoredCode | undefined, r: Presentation): Promise<TokenResponse> {
    if (!known) throw invalidGrant('The authorization code was already used.');
    const { client, codeHash, now, event, issuing, binding } = r;
    const consumedAt = epochMs(known.consumed_at);
    const retryUntil = epochMs(known.retry_until, true);
    const retry =
      (retryUntil !== null && retryUntil > now) || (retryUntil === null && this.lostAnswers.holds('redemption', codeHash, consumedAt));
    if (retry) {
      const row = { ...known, consumed_at: consumedAt };
      const grant = this.redeemed(row, client, r.input, r.requestedResources, now);
      event.userId = row.user_id;
      const taken = await this.transactions.withTransaction(async () => {
        if (!(await this.codes.takeRetry(codeHash, consumedAt, now))) return false;
        if (issuing) await this.issuer.storeRefreshToken(grant, now, event, row.scope, issuing, binding.refreshJkt);
        else await this.audit.write(event);
        return true;
      });
      if (taken) return this.respond(grant, row.scope, issuing, binding.jkt, event);
    }
    const replayed = { type: 'code.replayed', actor: `client:${client.id}`, userId: known.user_id, clientId: client.id } as const;
    await this.lifecycle.revokeGrant(known.grant_id, AuditService.event(replayed, r.context, now));
    throw invalidGrant('The authorization code was already used.');
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
