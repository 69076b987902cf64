import { Injectable } from '@nestjs/common';
import { AUDIT_ROW } from '../audit/audit.repository';
import { AuditService } from '../audit/audit.service';
import { uuidV7 } from '../common/uuid-v7';
import type { AuditContext } from '../audit/audit-events';
import { SqlRunner, Statement, epochMs, sql } from '../database/sql';
import type { Client } from './entities/client.entity';
import { GrantRevocationService } from './grant-revocation.service';
import { OAuthConfig } from './oauth.config';
import { SessionsService } from './sessions.service';
import { OAuthError } from './oauth-error';
import { isRegisteredRedirectUri } from './redirect-uris';
import { ResourceIndicators } from './resource-indicators';
import { PKCE_VALUE, hashSecret, randomSecret, s256 } from './secrets';
import { type GrantRef, type RefreshTokenSecret, TokenIssuer, type TokenResponse, loginOf } from './token-issuer.service';

export interface IssueCodeInput {
  client: Client;
  /** Never set: {@link CodeGrantService}'s code issue tells a session's code (`InSession`) by this key. */
  sessionId?: never;
  userId: string;
  /** The login of the session the code is issued in (epoch ms) and the session's `sid`, for ID tokens. */
  authTime: number;
  sid: string;
  /** OpenID Connect `nonce` of the request, or null. */
  nonce: string | null;
  scope: string;
  /** RFC 8707 resources the request named (empty: none). */
  resources: string[];
  redirectUri: string | null;
  codeChallenge: string | null;
  context: AuditContext;
}

/** What the authorization request decides of a code; the session supplies the rest. */
export type CodeRequest = Omit<IssueCodeInput, 'userId' | 'authTime' | 'sid'>;

/** Whose code it is, when the caller knows: the session's user, its login time and `sid`. */
type CodeUser = Pick<IssueCodeInput, 'userId' | 'authTime' | 'sid'>;

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
}

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

const GRANT_INSERT = `
  INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid)
  VALUES (:grantId, :userId, :clientId, :scope, :resources, :now, :grantExpiresAt, NULL, :authTime, :sid)`;
const CODE_INSERT = `
  INSERT INTO authorization_codes
    (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at, nonce)
  VALUES (:codeHash, :grantId, :clientId, :userId, :redirectUri, :scope, :codeChallenge, :now, :codeExpiresAt, NULL, :nonce)`;
/** PostgreSQL: the grant, its code and the `code.issued` event in one statement (one round trip). */
const INSERT_GRANT_AND_CODE = new Statement(
  `WITH grant_row AS (${GRANT_INSERT}), audit AS (${AUDIT_ROW.insert} VALUES (${AUDIT_ROW.values})) ${CODE_INSERT}`,
);
/** SQLite: the grant and the code, two writes of one transaction with the event. */
const INSERT_GRANT = new Statement(GRANT_INSERT);
const INSERT_CODE = new Statement(CODE_INSERT);
/**
 * PostgreSQL, a client that needs no consent: the login session read, and the grant and its code written when the
 * session is live, in one statement (one round trip for the whole authorization request).
 */
const ISSUE_CODE_IN_SESSION = new Statement(`
  WITH session AS (
    SELECT user_id, expires_at, COALESCE(auth_time, created_at) AS auth_time, sid FROM sessions WHERE id = :sessionId),
  live AS (
    SELECT user_id, auth_time, sid FROM session WHERE expires_at > :now AND auth_time >= CAST(:minAuthTime AS bigint)),
  grant_row AS (
    INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid)
    SELECT :grantId, user_id, :clientId, :scope, CAST(:resources AS text), CAST(:now AS bigint), CAST(:grantExpiresAt AS bigint), NULL,
      auth_time, sid
    FROM live
    RETURNING user_id),
  code_row AS (
    INSERT INTO authorization_codes
      (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at, nonce)
    SELECT :codeHash, :grantId, :clientId, user_id, :redirectUri, :scope, :codeChallenge, CAST(:now AS bigint), CAST(:codeExpiresAt AS bigint), NULL,
      CAST(:nonce AS text)
    FROM grant_row
    RETURNING user_id),
  audit AS (
    ${AUDIT_ROW.insert}
    SELECT :auditId, CAST(:now AS bigint), :auditType, 'user:' || user_id, user_id, :clientId, :auditAddress, :auditRequestId, :auditDetails
    FROM code_row)
  SELECT user_id FROM code_row`);

const CONSUMED_COLUMNS = 'grant_id, user_id, redirect_uri, scope, code_challenge, expires_at, nonce';
/**
 * Consumes a code of this client, if nobody has yet, and reads its grant in the same statement: the winner of a
 * concurrent redemption sees the grant as it was before any replay could revoke it.
 */
const CONSUME_CODE = new Statement(`
  UPDATE authorization_codes SET consumed_at = :now
  WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL
  RETURNING ${CONSUMED_COLUMNS},
    (SELECT g.revoked_at FROM grants g WHERE g.id = authorization_codes.grant_id) AS grant_revoked_at,
    (SELECT g.expires_at FROM grants g WHERE g.id = authorization_codes.grant_id) AS grant_expires_at,
    (SELECT g.resources FROM grants g WHERE g.id = authorization_codes.grant_id) AS grant_resources,
    (SELECT g.auth_time FROM grants g WHERE g.id = authorization_codes.grant_id) AS grant_auth_time,
    (SELECT g.sid FROM grants g WHERE g.id = authorization_codes.grant_id) AS grant_sid`);
/**
 * PostgreSQL: the same, and in the same statement (one round trip) the new refresh token — stored only if the
 * redemption succeeds, under the conditions {@link CodeGrantService.exchange} checks again on the returned row:
 * live grant, live code, the PKCE challenge of the presented verifier (NULL for none), the redirect URI and the
 * requested resources (RFC 8707: among the grant's, or the API's when it named none; `:requested` space-separated).
 */
const CONSUME_CODE_AND_ISSUE = new Statement(`
  WITH consumed AS (
    UPDATE authorization_codes SET consumed_at = :now
    WHERE code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL
    RETURNING ${CONSUMED_COLUMNS}),
  code AS (
    SELECT consumed.*, g.revoked_at AS grant_revoked_at, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
      g.auth_time AS grant_auth_time, g.sid AS grant_sid
    FROM consumed LEFT JOIN grants g ON g.id = consumed.grant_id),
  passed AS (
    SELECT * FROM code
    WHERE grant_revoked_at IS NULL AND grant_expires_at > :now AND expires_at > :now
      AND code_challenge IS NOT DISTINCT FROM :challenge
      AND (redirect_uri = :redirectUri OR (redirect_uri IS NULL AND :registeredRedirect))
      AND (:requested = '' OR NOT EXISTS (
        SELECT 1 FROM unnest(string_to_array(:requested, ' ')) AS requested(uri)
        WHERE requested.uri <> ALL (string_to_array(COALESCE(NULLIF(grant_resources, ''), :api), ' '))))),
  issued AS (
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, user_id, scope, created_at, expires_at, rotated_at)
    SELECT :refreshHash, grant_id, :clientId, user_id, scope, CAST(:now AS bigint), grant_expires_at, NULL FROM passed
    WHERE :withRefresh
    RETURNING 1),
  audit AS (
    ${AUDIT_ROW.insert}
    SELECT :auditId, CAST(:now AS bigint), :auditType, :auditActor, user_id, :clientId, :auditAddress, :auditRequestId, :auditDetails
    FROM passed
    RETURNING 1)
  SELECT code.*, EXISTS (SELECT 1 FROM issued) AS issued, EXISTS (SELECT 1 FROM audit) AS audited FROM code`);
/**
 * What {@link CONSUME_CODE_AND_ISSUE} returned, read back by what it wrote (the code consumed at this request's
 * time, and its event, which only a redemption that passed its checks writes): when the connection is lost before
 * its answer, the redemption may have committed (see SqlRunner.oneOrOutcome). A redemption of the same code by
 * another request in the same millisecond has another event, so it is never taken for this one.
 */
const CODE_SETTLED = new Statement(`SELECT 1 FROM authorization_codes WHERE code_hash = :codeHash FOR UPDATE`);
const CONSUMED_OUTCOME = new Statement(`
  SELECT c.grant_id, c.user_id, c.redirect_uri, c.scope, c.code_challenge, c.expires_at, c.nonce,
    g.revoked_at AS grant_revoked_at, g.expires_at AS grant_expires_at, g.resources AS grant_resources,
    g.auth_time AS grant_auth_time, g.sid AS grant_sid,
    EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = :refreshHash) AS issued,
    EXISTS (SELECT 1 FROM audit_events WHERE at = :now AND id = :auditId) AS audited
  FROM authorization_codes c LEFT JOIN grants g ON g.id = c.grant_id
  WHERE c.code_hash = :codeHash AND c.client_id = :clientId AND c.consumed_at = :now
    AND EXISTS (SELECT 1 FROM audit_events WHERE at = :now AND id = :auditId)`);
const FIND_CODE = sql`SELECT grant_id, client_id, user_id FROM authorization_codes WHERE code_hash = :codeHash`;

interface ConsumedCode {
  grant_id: string;
  user_id: string;
  redirect_uri: string | null;
  scope: string;
  code_challenge: string | null;
  expires_at: string | number;
  grant_revoked_at: string | number | null;
  grant_expires_at: string | number | null;
  grant_resources: string | null;
  nonce: string | null;
  grant_auth_time: string | number | null;
  grant_sid: string | null;
  /** Whether the redemption stored the new refresh token (PostgreSQL: its statement; SQLite: its unit). */
  issued?: boolean;
  /** Whether the redemption stored the `code.redeemed` event (exactly when the code's checks pass). */
  audited?: boolean;
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
    private readonly db: SqlRunner,
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
    if (this.db.postgres) await this.db.run(INSERT_GRANT_AND_CODE, params);
    else {
      await this.db.atomic([{ statement: INSERT_GRANT, params }, { statement: INSERT_CODE, params }, AuditService.writeOf(event)]);
    }
    this.audit.log(event);
    return code;
  }

  /**
   * For a client that needs no consent (trusted): the code for the user of the login session a cookie names, or
   * undefined when there is no live session whose login was at `minAuthTime` (epoch ms; OpenID Connect `max_age`)
   * or later. On PostgreSQL the session check and the writes are one statement.
   */
  async issueCodeInSession(sessionSecret: string | undefined, input: CodeRequest, minAuthTime = 0): Promise<string | undefined> {
    if (!this.db.postgres) {
      const session = await this.sessions.current(sessionSecret);
      return session && session.authTime >= minAuthTime
        ? this.issueCode({ ...input, userId: session.userId, authTime: session.authTime, sid: session.sid })
        : undefined;
    }
    const sessionId = this.sessions.idOf(sessionSecret);
    if (sessionId === undefined) return undefined;
    // The user, the login time and the sid are the session's: the statement takes them from the session row.
    const { code, params, event } = this.newCode(input, { sessionId, minAuthTime }, Date.now());
    const row = await this.db.one<{ user_id: string }>(ISSUE_CODE_IN_SESSION, params);
    if (!row) return undefined;
    event.actor = `user:${row.user_id}`;
    event.userId = row.user_id;
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
      nonce: input.nonce,
      authTime: user?.authTime ?? null,
      sid: user?.sid ?? null,
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
    const codeHash = hashSecret(input.code);
    const now = Date.now();
    const actor = `client:${client.id}` as const;
    const event = AuditService.event({ type: 'code.redeemed', actor, clientId: client.id }, context, now);
    let row: ConsumedCode | undefined;
    let refresh: RefreshTokenSecret | undefined;
    // SQLite: what the unit's checks decided (PostgreSQL's statement decides in SQL; they are checked below).
    let decided: { grant?: GrantRef; refused?: OAuthError } = {};
    if (this.db.postgres) {
      refresh = this.issuer.newRefreshToken();
      row = await this.db.oneOrOutcome<ConsumedCode>(
        CONSUME_CODE_AND_ISSUE,
        {
          now,
          codeHash,
          clientId: client.id,
          refreshHash: refresh.hash,
          challenge: input.codeVerifier === undefined ? null : s256(input.codeVerifier),
          redirectUri: input.redirectUri ?? null,
          registeredRedirect: input.redirectUri === undefined || isRegisteredRedirectUri(client.redirectUris, input.redirectUri),
          withRefresh,
          requested: requestedResources.join(' '),
          api: this.resources.api,
          ...AuditService.params(event),
        },
        { settle: CODE_SETTLED, outcome: CONSUMED_OUTCOME },
      );
    } else {
      // One transaction: the code's consumption and, when its checks pass, the event with the refresh
      // token (for a client allowed the refresh-token grant). A refused code stays consumed; if storing what it
      // yields fails, nothing of the unit stays (as with PostgreSQL's one statement).
      const issuing = withRefresh ? this.issuer.newRefreshToken() : undefined;
      refresh = issuing;
      [row, decided] = await this.db.sqliteUnit((exec): [ConsumedCode | undefined, typeof decided] => {
        const consumed = exec<ConsumedCode>(CONSUME_CODE, { now, codeHash, clientId: client.id }).rows[0];
        if (!consumed) return [undefined, {}];
        let grant: GrantRef;
        try {
          grant = this.redeemed(consumed, client, input, requestedResources, now);
        } catch (error) {
          if (error instanceof OAuthError) return [consumed, { refused: error }];
          throw error;
        }
        event.userId = consumed.user_id;
        const writes = issuing ? this.issuer.refreshTokenWrites(grant, now, event, consumed.scope, issuing) : [AuditService.writeOf(event)];
        for (const { statement, params } of writes) exec(statement, params);
        consumed.issued = issuing !== undefined;
        consumed.audited = true;
        return [consumed, { grant }];
      });
    }
    if (!row) {
      const known = await this.db.one<{ grant_id: string; client_id: string; user_id: string }>(FIND_CODE, { codeHash });
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
      if (!withRefresh) return this.issuer.respond(grant, row.scope);
      if (refresh && row.issued) return this.issuer.respond(grant, row.scope, refresh);
    }
    // A client not allowed the refresh-token grant gets no refresh token it could not use.
    if (!withRefresh) {
      await this.audit.save(event);
      return this.issuer.respond(grant, row.scope);
    }
    return this.issuer.issue(grant, row.scope, now, event);
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
      login: loginOf(row.grant_auth_time, row.grant_sid, row.nonce),
    };
  }
}
