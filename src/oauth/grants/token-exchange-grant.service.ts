import { Injectable } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import type { AuditContext } from '../../audit/audit-events';
import { AccessTokenVerifier } from '../../auth/access-token-verifier.service';
import type { ActClaim, AuthPrincipal } from '../../auth/principal';
import { scopesHeld } from '../../auth/scopes';
import { UsersService } from '../../users/users.service';
import { RevokedGrantsService } from '../../auth/revoked-grants.service';
import { AppConfig } from '../../config/app-config';
import { type Client, TOKEN_EXCHANGE_GRANT } from '../entities/client.entity';
import { askableScopes } from '../clients/client-metadata';
import { GrantsRepository } from './grants.repository';
import { OAuthError } from '../oauth-error';
import { ResourceIndicators } from '../resource-indicators';
import { TokenIssuer, type TokenResponse } from './token-issuer.service';

/** RFC 8693 3: the token types this server takes and issues. */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
/** Its access tokens are JWTs, so either name fits a subject or actor token. */
const INPUT_TOKEN_TYPES: readonly string[] = [ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE];

/** How many actors a token may name (its own and the nested ones): a chain of exchanges ends there. */
export const MAX_ACTORS = 5;

/** The parameters of a token-exchange request (RFC 8693 2.1), as sent; `resource` and `audience` space-joined. */
export interface TokenExchangeRequest {
  subjectToken?: string;
  subjectTokenType?: string;
  actorToken?: string;
  actorTokenType?: string;
  requestedTokenType?: string;
  resource?: string;
  audience?: string;
  scope?: string;
}

function invalidRequest(description: string): OAuthError {
  return new OAuthError('invalid_request', description);
}

function invalidGrant(description: string): OAuthError {
  return new OAuthError('invalid_grant', description);
}

function audiences(aud: string | string[]): string[] {
  return typeof aud === 'string' ? [aud] : aud;
}

/** The client whose grant an exchanged token comes from, when it is not the exchanging client. */
function grantClientOf(subject: AuthPrincipal, clientId: string): string | undefined {
  const grantClient = subject.grantClientId ?? subject.clientId;
  return grantClient === clientId ? undefined : grantClient;
}

function actorCount(act: ActClaim | undefined): number {
  return act === undefined ? 0 : 1 + actorCount(act.act);
}

/**
 * OAuth 2.0 Token Exchange (RFC 8693) for delegation: a confidential client allowed the grant trades a person's
 * access token of this server (the subject token) for a new one — for another resource, a narrower scope — that
 * names who acts for the person in `act`. Nothing is stored but the audit event; there is no refresh token.
 *
 * The new token keeps the subject token's `sub` and grant (`gid`), so revoking that grant (the connected-apps page,
 * `/revoke`, refresh-token reuse) ends it like every other token of the grant; it never outlives the subject
 * token (`exp`); its `client_id` is the exchanging client, which alone may introspect and revoke it.
 */
@Injectable()
export class TokenExchangeGrantService {
  constructor(
    private readonly verifier: AccessTokenVerifier,
    private readonly revoked: RevokedGrantsService,
    private readonly issuer: TokenIssuer,
    private readonly resources: ResourceIndicators,
    private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly grants: GrantsRepository,
    private readonly users: UsersService,
  ) {}

  async exchange(client: Client, request: TokenExchangeRequest, context: AuditContext, jkt?: string): Promise<TokenResponse> {
    // A public client presents no secret: it has not shown who would act for the person.
    if (client.isPublic) throw new OAuthError('invalid_client', 'A public client cannot use token exchange.');
    if (!client.grantTypes.includes(TOKEN_EXCHANGE_GRANT)) {
      throw new OAuthError('unauthorized_client', 'This client is not allowed the token-exchange grant.');
    }
    const { subjectToken, actorToken } = checkedParameters(request);

    const subject = await this.verified(subjectToken, 'subject_token');
    if (subject.kind !== 'user') {
      throw invalidGrant("The subject_token must be a person's token (a client acting as itself uses client_credentials).");
    }
    if (!this.mayExchange(client, subject)) throw invalidGrant('The subject_token is not one this client may exchange.');
    if (actorCount(subject.act) >= MAX_ACTORS) throw invalidGrant(`The subject_token's delegation chain is already ${MAX_ACTORS} long.`);
    const actor = actorToken === undefined ? undefined : await this.verified(actorToken, 'actor_token');
    // The actor is one the client can vouch for: a token issued to the client itself (its own client-credentials
    // token, a person's token it obtained). A token it merely holds (another client's, seen passing by) would let it
    // name anyone as the actor.
    if (actor && actor.clientId !== client.id) throw invalidGrant('The actor_token must have been issued to this client.');
    // A token bound to a key is exchanged only with a proof of that key: else a stolen one could be traded for
    // a token that needs none.
    for (const [token, name] of [
      [subject, 'subject_token'],
      [actor, 'actor_token'],
    ] as const) {
      if (token?.jkt !== undefined && token.jkt !== jkt)
        throw invalidGrant(`The ${name} is bound to a key: present a DPoP proof of that key.`);
    }

    const audience = this.target(client, request, subject);
    const scope = exchangedScope(client, subject, request.scope);
    // A scope bound to a role the person does not have (now) is refused, whatever the subject token carries.
    const scopes = scope.split(' ');
    if ((await scopesHeld(scopes, () => this.users.roleOf(subject.sub))).length !== scopes.length) {
      throw new OAuthError('invalid_scope', 'The scope needs a role the person does not have.');
    }
    const act: ActClaim = {
      sub: actor?.sub ?? client.id,
      client_id: actor?.clientId ?? client.id,
      ...(subject.act ? { act: subject.act } : {}),
    };

    const now = Date.now();
    const event = AuditService.event(
      {
        type: 'token.exchanged',
        actor: `client:${client.id}`,
        userId: subject.sub,
        clientId: client.id,
        details: { scope, aud: audiences(audience).join(' '), act_sub: act.sub, subject_client_id: subject.clientId },
      },
      context,
      now,
    );
    const recorded = await this.grants.recordIfLive(event, subject.grantId, actor?.kind === 'user' ? actor.grantId : null);
    if (!recorded) throw invalidGrant('The grant of the subject_token or actor_token is no longer valid.');
    this.audit.log(event);

    const access = this.issuer.mintAccessToken({
      sub: subject.sub,
      clientId: client.id,
      scope,
      grantId: subject.grantId,
      grantClientId: grantClientOf(subject, client.id),
      audience,
      act,
      notAfter: subject.exp,
      jkt,
    });
    return {
      access_token: access.token,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: jkt ? 'DPoP' : 'Bearer',
      expires_in: access.exp - access.iat,
      scope,
    };
  }

  /**
   * A live access token of this server: our signature, issuer and `typ`, unexpired (no clock skew: it is checked
   * here, where it was issued), its grant not on the revoked list. Any `aud`: whose tokens a client may exchange is
   * {@link mayExchange}'s question.
   */
  private async verified(token: string, parameter: 'subject_token' | 'actor_token'): Promise<AuthPrincipal> {
    const principal = await this.verifier.verifySignatureAndClaims(token, { anyAudience: true }).catch(() => undefined);
    if (!principal || principal.exp * 1000 <= Date.now() || this.revoked.isTokenRevoked(principal)) {
      throw invalidGrant(`The ${parameter} is not a valid access token of this server.`);
    }
    return principal;
  }

  /**
   * Whose tokens a client may exchange: its own (a client narrowing or retargeting what the person let it do, an
   * agent handing a smaller token to a tool), and those aimed at a resource registered for it (`--resource`: the
   * client is, or speaks for, that resource server, and acts for the person downstream — "on behalf of"). This API
   * (`AUDIENCE`) counts only when an operator registered it for the client explicitly (`--resource <AUDIENCE>`, a
   * gateway or tool server in front of the API): every client may ask for the API without it, so a token aimed at
   * the API is otherwise anyone's to have seen, and no client may launder one into its own.
   */
  private mayExchange(client: Client, subject: AuthPrincipal): boolean {
    if (subject.clientId === client.id) return true;
    return audiences(subject.aud).some((aud) => client.resources.includes(aud));
  }

  /**
   * The new token's `aud`: the `resource` and `audience` values (RFC 8693 2.1 allows both; this server's audiences
   * are resource URIs), each one the client may ask tokens for; when none is named, the subject token's, which must
   * be such too.
   */
  private target(client: Client, request: TokenExchangeRequest, subject: AuthPrincipal): string | string[] {
    const named = [request.resource, request.audience].filter((v): v is string => v !== undefined);
    const requested = named.length ? named.join(' ') : audiences(subject.aud).join(' ');
    return this.resources.audience(this.resources.atTokenEndpoint(client, requested));
  }
}

/** The presence and types of the token parameters (RFC 8693 2.1); every fault is `invalid_request`. */
function checkedParameters(request: TokenExchangeRequest): { subjectToken: string; actorToken?: string } {
  const { subjectToken, subjectTokenType, actorToken, actorTokenType, requestedTokenType } = request;
  if (!subjectToken) throw invalidRequest('subject_token is required.');
  if (!subjectTokenType) throw invalidRequest('subject_token_type is required.');
  if (!INPUT_TOKEN_TYPES.includes(subjectTokenType)) {
    throw invalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE} (or ${JWT_TOKEN_TYPE}).`);
  }
  if ((actorToken === undefined) !== (actorTokenType === undefined)) {
    throw invalidRequest('actor_token and actor_token_type go together.');
  }
  if (actorToken === '') throw invalidRequest('actor_token is empty.');
  if (actorTokenType !== undefined && !INPUT_TOKEN_TYPES.includes(actorTokenType)) {
    throw invalidRequest(`actor_token_type must be ${ACCESS_TOKEN_TYPE} (or ${JWT_TOKEN_TYPE}).`);
  }
  if (requestedTokenType !== undefined && requestedTokenType !== ACCESS_TOKEN_TYPE) {
    throw invalidRequest(`Only ${ACCESS_TOKEN_TYPE} can be requested.`);
  }
  return { subjectToken, actorToken };
}

/**
 * The new token's scope: the requested subset of the subject token's scope that the client may also have (RFC 8693
 * 2.1); when none is requested, the subject token's scopes the client may have. Anything wider is `invalid_scope`.
 */
function exchangedScope(client: Client, subject: AuthPrincipal, requested: string | undefined): string {
  const clientScopes = askableScopes(client);
  if (requested === undefined) {
    const kept = [...subject.scopes].filter((s) => clientScopes.has(s));
    if (kept.length === 0) throw new OAuthError('invalid_scope', 'The subject_token has no scope this client may have.');
    return kept.join(' ');
  }
  const scopes = [...new Set(requested.split(' ').filter(Boolean))];
  if (scopes.length === 0 || scopes.some((s) => !subject.scopes.has(s) || !clientScopes.has(s))) {
    throw new OAuthError('invalid_scope', "The requested scope exceeds the subject_token's scope or this client's.");
  }
  return scopes.join(' ');
}
