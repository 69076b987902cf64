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
import { type GrantRef, type RefreshTokenSecret, TokenIssuer, type TokenResponse } from './token-issuer.service';

export interface IssueCodeInput {
  client: Client;
  /** Never set: {@link CodeGrantService}'s code issue tells a session's code (`InSession`) by this key. */
  sessionId?: never;
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

/** Whose code it is, when the caller knows: the session's user, its login time and `sid`. */
type CodeUser = Pick<IssueCodeInput, 'userId' | 'authTime' | 'sid' | 'amr'>;

/** PostgreSQL: a code for the user of the session row `sessionId` (its id: the session secret's hash). */
interface InSession {
  sessionId: string;
  minAuthTime: number;
}

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
 * The authorization-code grant (RFC 6749 4.1 with RFC 7636 PKCE): a code starts a grant; redeeming it is decided
 * by one conditional UPDATE whose returned row picks the one winner, across requests and instances. The hot path
 * is plain SQL instead of the ORM, and each write carries its audit event in the same statement: on PostgreSQL
 * one statement issues a code, one redeems it (with the refresh token); on SQLite, a transaction of three writes
 * issues it and one of two to three redeems it (in-process statements cost microseconds, not round trips).
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
  ) {}

  /** Starts a grant and returns its authorization code (shown once; stored as a hash), with its `code.issued` event. */
  async issueCode(input: IssueCodeInput): Promise<string> {
    const { code, params, event } = this.newCode(input, input, Date.now());
    await this.codes.insertWithGrant(params, event);
    this.audit.log(event);
    return code;
  }

  /**
   * For a client that needs no consent (trusted): the code for the user of the login session a cookie names, or
   * undefined when there is no live session whose login was at `minAuthTime` (epoch ms; OpenID Connect `max_age`)
   * or later. On PostgreSQL the session check and the writes are one statement.
   */
  async issueCodeInSession(sessionSecret: string | undefined, input: CodeRequest, minAuthTime = 0): Promise<string | undefined> {
    if (!this.codes.inOneStatement) {
      const session = await this.sessions.current(sessionSecret);
      return session && session.authTime >= minAuthTime
        ? this.issueCode({ ...input, userId: session.userId, authTime: session.authTime, sid: session.sid, amr: session.amr })
        : undefined;
    }
    const sessionId = this.sessions.idOf(sessionSecret);
    if (sessionId === undefined) return undefined;
    // The user, the login time and the sid are the session's: the statement takes them from the session row.
    const { code, params, event } = this.newCode(input, { sessionId, minAuthTime }, Date.now());
    const userId = await this.codes.insertInSession(params);
    if (userId === undefined) return undefined;
    event.actor = `user:${userId}`;
    event.userId = userId;
    this.audit.log(event);
    return code;
  }

  /**
   * A new code, its `code.issued` event and the parameters of the statement that stores them: for the session's
   * user (`who`), or, on PostgreSQL, for whoever the session row `sessionId` names, logged in at `minAuthTime` or
   * later. One object literal with every parameter: it was spread into a copy with the session's two added, whose
   * added properties took V8's slow store path on every request (`Runtime_DefineNamedOwnIC_Slow` in the profile).
   */
  private newCode(input: CodeRequest, who: CodeUser | InSession, now: number) {
    const code = randomSecret(32);
    const session = 'sessionId' in who ? who : undefined;
    const user = 'sessionId' in who ? undefined : who;
    const userId = user?.userId ?? null;
    const event = AuditService.event(
      { type: 'code.issued', actor: `user:${userId}`, userId, clientId: input.client.id, details: { scope: input.scope } },
      input.context,
      now,
    );
    const params = {
      // Time-ordered: the grant's rows and index entries go in at the end of their indexes (see uuidV7).
      grantId: uuidV7(now),
      codeHash: hashSecret(code),
      userId,
      clientId: input.client.id,
      scope: input.scope,
      resources: ResourceIndicators.stored(input.resources),
      redirectUri: input.redirectUri,
      codeChallenge: input.codeChallenge,
      dpopJkt: input.dpopJkt ?? null,
      nonce: input.nonce,
      authTime: user?.authTime ?? null,
      sid: user?.sid ?? null,
      amr: user?.amr ?? null,
      sessionId: session?.sessionId ?? null,
      minAuthTime: session?.minAuthTime ?? 0,
      now,
      grantExpiresAt: now + this.config.refreshTokenTtl * 1000,
      codeExpiresAt: now + this.config.authCodeTtl * 1000,
      ...AuditService.params(event),
    };
    return { code, params, event };
  }

  async exchange(client: Client, input: CodeExchangeInput, context: AuditContext): Promise<TokenResponse> {
    if (!input.code) throw new OAuthError('invalid_request', 'code is required.');
    if (input.codeVerifier !== undefined && !PKCE_VALUE.test(input.codeVerifier)) {
      throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 unreserved characters.');
    }
    // A resource this client may never name is refused before the code is spent (RFC 8707 2.2).
    const requestedResources = this.resources.atTokenEndpoint(client, input.resource);
    const withRefresh = client.grantTypes.includes('refresh_token');
    const binding = TokenIssuer.bindingFor(client, input.jkt);
    const codeHash = hashSecret(input.code);
    const now = Date.now();
    const actor = `client:${client.id}` as const;
    const event = AuditService.event({ type: 'code.redeemed', actor, clientId: client.id }, context, now);
    let row: ConsumedCode | undefined;
    let refresh: RefreshTokenSecret | undefined;
    // SQLite: what the unit's checks decided (PostgreSQL's statement decides in SQL; they are checked below).
    let decided: { grant?: GrantRef; refused?: OAuthError } = {};
    if (this.codes.inOneStatement) {
      refresh = this.issuer.newRefreshToken();
      row = await this.codes.consumeAndIssue({
        now,
        codeHash,
        clientId: client.id,
        refreshHash: refresh.hash,
        challenge: input.codeVerifier === undefined ? null : s256(input.codeVerifier),
        redirectUri: input.redirectUri ?? null,
        registeredRedirect: input.redirectUri === undefined || isRegisteredRedirectUri(client.redirectUris, input.redirectUri),
        withRefresh,
        jkt: input.jkt ?? null,
        refreshJkt: binding.refreshJkt ?? null,
        requested: requestedResources.join(' '),
        api: this.resources.api,
        ...AuditService.params(event),
      });
    } else {
      // One transaction: the code's consumption and, when its checks pass, the event with the refresh
      // token (for a client allowed the refresh-token grant). A refused code stays consumed; if storing what it
      // yields fails, nothing of the unit stays (as with PostgreSQL's one statement).
      const issuing = withRefresh ? this.issuer.newRefreshToken() : undefined;
      refresh = issuing;
      const unit = await this.codes.consumeInUnit<[ConsumedCode, typeof decided]>({ now, codeHash, clientId: client.id }, (consumed) => {
        let grant: GrantRef;
        try {
          grant = this.redeemed(consumed, client, input, requestedResources, now);
        } catch (error) {
          if (error instanceof OAuthError) return { writes: [], result: [consumed, { refused: error }] };
          throw error;
        }
        event.userId = consumed.user_id;
        const writes = issuing
          ? this.issuer.refreshTokenWrites(grant, now, event, consumed.scope, issuing, binding.refreshJkt)
          : [AuditService.writeOf(event)];
        consumed.issued = issuing !== undefined;
        consumed.audited = true;
        return { writes, result: [consumed, { grant }] };
      });
      if (unit) [row, decided] = unit;
    }
    if (!row) {
      const known = await this.codes.find(codeHash);
      // Unknown, or a code of another client, which is not consumed: that client cannot burn it.
      if (!known || known.client_id !== client.id) throw invalidGrant('The authorization code is invalid.');
      // Presented a second time: whatever the first redemption issued is revoked (RFC 6749 4.1.2).
      const replayed = { type: 'code.replayed', actor, userId: known.user_id, clientId: client.id } as const;
      await this.lifecycle.revokeGrant(known.grant_id, AuditService.event(replayed, context, now));
      throw invalidGrant('The authorization code was already used.');
    }
    // The code is consumed now, whatever the outcome below.
    if (decided.refused) throw decided.refused;
    const grant = decided.grant ?? this.redeemed(row, client, input, requestedResources, now);
    // These checks are the conditions of the PostgreSQL statement and of the SQLite unit: the event (and the refresh
    // token, for a client allowed the refresh-token grant) is stored exactly when they pass.
    event.userId = row.user_id;
    if (row.audited) {
      this.audit.log(event);
      if (!withRefresh) return this.issuer.respond(grant, row.scope, undefined, binding.jkt);
      if (refresh && row.issued) return this.issuer.respond(grant, row.scope, refresh, binding.jkt);
    }
    return this.issuer.issueFor(client, grant, row.scope, now, event, binding);
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
    if (epochMs(row.expires_at) <= now) throw invalidGrant('The authorization code has expired.');
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
    // A resource outside the authorization is refused (the refresh token a PostgreSQL statement may have stored
    // is then never handed out: nobody holds its secret).
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
