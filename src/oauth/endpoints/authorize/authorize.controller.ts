import { auditContextOf } from '../../../audit/audit-events';
import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiRedirect } from '../../../common/openapi';
import { Public } from '../../../auth/auth.decorators';
import { type AuthorizationRequestResult, AuthorizationRequestValidator } from './authorization-request';
import { ApiAuthorizeQuery } from './authorize.openapi';
import { hasRoleBoundScope, scopesHeld } from '../../../auth/scopes';
import { UsersService } from '../../../users/users.service';
import { CodeGrantService, type CodeRequest } from '../../grants/code-grant.service';
import { ClientMetadataDocuments } from '../../clients/cimd/client-metadata.service';
import { ConsentService } from '../../interaction/consent.service';
import { sessionCookie } from '../../interaction/cookies';
import { OAuthPages, sendHtml, sendRedirect } from '../../interaction/pages';
import { safeEqual } from '../../../crypto/secrets';
import { type CurrentSession, SessionsService } from '../../interaction/sessions.service';
import { type Acr, acrOfStored, meetsAcr } from '../../../auth/acr';
import { asksForLogin, minAuthTimeOf, pushedLoginAnswered } from './login-freshness';
import { AuthorizeAnswers } from './authorize-answers';
import { consentPageView } from './consent-page-view';

type ValidRequest = Extract<AuthorizationRequestResult, { kind: 'valid' }>;

/** The authorization endpoint (RFC 6749 4.1) with its login redirect and consent page: redirects and HTML, so it writes the response. */
@Public()
@Controller('authorize')
export class AuthorizeController {
  constructor(
    private readonly validator: AuthorizationRequestValidator,
    private readonly answers: AuthorizeAnswers,
    private readonly sessions: SessionsService,
    private readonly codeGrant: CodeGrantService,
    private readonly consents: ConsentService,
    private readonly pages: OAuthPages,
    private readonly metadataDocuments: ClientMetadataDocuments,
    private readonly users: UsersService,
  ) {}

  @Get()
  @ApiAuthorizeQuery()
  @ApiRedirect(
    302,
    'With a live session and consent: to redirect_uri with code and state (or error and state); without a session: to /login',
  )
  @ApiHtml(200, 'The consent page (the client is not trusted and the scopes were not granted before)')
  @ApiHtml(
    400,
    'An unknown client or redirect URI, or a client ID URL whose metadata document cannot be fetched or used: an error page, never a redirect; an error for a client that chose its own redirect URIs: a page with a link there',
  )
  async authorize(@Req() req: Request, @Res() res: Response): Promise<void> {
    const request = await this.validator.validate(req.query as Record<string, unknown>);
    if (this.answers.answeredError(request, res) || request.kind !== 'valid') return;

    const { prompt } = request;
    if (asksForLogin(request)) {
      await this.answers.loginNeeded(req, res, request);
      return;
    }
    // max_age (or a pushed request's asked-for login): a session whose login is older needs a new one.
    const minAuthTime = minAuthTimeOf(request);
    // A client known only by its metadata document's URL is asked about every time: what that URL serves may have
    // changed hands since the person last allowed it.
    const forceConsent = prompt.has('consent') || request.client.metadataDocument !== null;
    // A scope bound to a role needs the person's role: the path that reads the session first.
    const roleBound = hasRoleBoundScope(request.scope.split(' '));
    // A level above one factor (acr_values, or the client's own minimum) needs the session's methods: read first.
    const leveled = request.acr !== null && request.acr !== 'aal1';
    // A pushed request is used up with its code, by the path below.
    if (request.client.trusted && !forceConsent && request.hintedUser === null && !roleBound && !leveled && request.pushed === null) {
      // No consent needed: the session is checked and the code written together (one statement on PostgreSQL).
      const code = await this.codeGrant.issueCodeInSession(sessionCookie.read(req), this.codeInput(request, req), minAuthTime);
      if (code === undefined) await this.answers.loginNeeded(req, res, request);
      else sendRedirect(res, 302, this.validator.redirectTo(request.redirectUri, { code, state: request.state }));
      return;
    }
    // Any other client: the consent is read with the session, in one query.
    const session = await this.sessions.current(sessionCookie.read(req), request.client.id);
    // id_token_hint: the session must be the hinted person's (Core 3.1.2.1); another person's needs a login.
    if (!session || session.authTime < minAuthTime || (request.hintedUser !== null && session.userId !== request.hintedUser)) {
      await this.answers.loginNeeded(req, res, request);
      return;
    }
    if (!levelMet(session, request.acr)) {
      await this.answers.stepUpNeeded(req, res, request, session, 302);
      return;
    }
    const granted = await this.withGrantableScope(request, session.userId);
    if (!granted) {
      this.answers.noGrantableScope(res, request);
      return;
    }
    await this.consentOrCode(req, res, granted, session, forceConsent);
  }

  /** With a session: the code at once when nothing needs asking, else the consent page (or prompt=none's error). */
  private async consentOrCode(
    req: Request,
    res: Response,
    request: ValidRequest,
    session: CurrentSession,
    forceConsent: boolean,
  ): Promise<void> {
    const { prompt } = request;
    const requested = request.scope.split(' ');
    const consented = session.consented ?? new Set<string>();
    // Step-up: what the person allowed this client before is not asked again; prompt=consent asks for everything.
    // A trusted client (here because of an id_token_hint) is asked nothing unless prompt=consent.
    const asked = forceConsent ? requested : request.client.trusted ? [] : requested.filter((s) => !consented.has(s));
    if (asked.length === 0) {
      await this.redirectWithCode(req, res, request, session, 302);
      return;
    }
    if (prompt.has('none')) {
      this.answers.interactionRequired(res, request, 'consent_required', 'The user has not allowed this client these scopes.');
      return;
    }
    sendHtml(res, 200, this.pages.consent(consentPageView(request, asked, session.csrfToken)));
  }

  @Post('consent')
  @ApiPageForm(
    {
      csrf: { type: 'string' },
      decision: { type: 'string', enum: ['allow', 'deny'] },
      response_type: { type: 'string' },
      client_id: { type: 'string' },
      redirect_uri: { type: 'string' },
      scope: { type: 'string' },
      resource: { type: 'string', description: 'RFC 8707 resources of the request, space-separated' },
      state: { type: 'string' },
      code_challenge: { type: 'string' },
      code_challenge_method: { type: 'string' },
      nonce: { type: 'string' },
    },
    ['csrf', 'decision', 'client_id'],
  )
  @ApiRedirect(
    303,
    'To redirect_uri with code and state (allow), or error=access_denied (deny) or another error; to /authorize when a pushed request still needs its login',
  )
  @ApiPageFormErrors('An unknown client or redirect URI, or no decision: an error page')
  @ApiHtml(403, 'No session, or a CSRF token that does not match it')
  async consent(@Req() req: Request, @Res() res: Response): Promise<void> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const session = await this.sessions.current(sessionCookie.read(req));
    const { csrf, decision, ...params } = body;
    if (!session || typeof csrf !== 'string' || !safeEqual(csrf, session.csrfToken)) {
      sendHtml(res, 403, this.pages.error('Request refused', 'The consent form is not valid any more. Start again.'));
      return;
    }
    const validated = await this.validator.validate(params);
    if (this.answers.answeredError(validated, res, 303) || validated.kind !== 'valid') return;
    // A pushed request's prompt=login or max_age holds here too: back to /authorize, which asks for the login.
    if (!pushedLoginAnswered(validated, session)) {
      sendRedirect(res, 303, `/authorize?${new URLSearchParams(validated.params as Record<string, string>).toString()}`);
      return;
    }
    // The client's own minimum level holds here too (the form carries no acr_values: those were met before it).
    if (!levelMet(session, validated.acr)) {
      await this.answers.stepUpNeeded(req, res, validated, session, 303);
      return;
    }
    // The form may have been changed: scopes bound to a role the person lacks are left out here too.
    const request = await this.withGrantableScope(validated, session.userId);
    if (!request) {
      this.answers.noGrantableScope(res, validated, 303);
      return;
    }
    if (decision === 'allow') {
      // A client known by its metadata document gets its row now that a person allows it (codes and consent name it).
      if (request.client.metadataDocument !== null) await this.metadataDocuments.persist(request.client, auditContextOf(req));
      await this.consents.record(session.userId, request.client.id, request.scope, auditContextOf(req));
      await this.redirectWithCode(req, res, request, session, 303);
      return;
    }
    if (decision === 'deny') {
      if (!(await this.answers.usedUp(res, request))) return;
      await this.consents.deny(session.userId, request.client.id, request.scope, auditContextOf(req));
      sendRedirect(
        res,
        303,
        this.validator.redirectTo(request.redirectUri, {
          error: 'access_denied',
          error_description: 'The user denied the request.',
          state: request.state,
        }),
      );
      return;
    }
    sendHtml(res, 400, this.pages.error('Invalid request', 'Choose Allow or Deny.'));
  }

  /**
   * The request with the scopes the person may hold (RFC 6749 3.3: the server may grant less than asked, and the
   * token's and the response's `scope` say what it granted): a scope bound to a role the person lacks is left out
   * of the consent page, the grant and the token. Undefined when nothing is left.
   */
  private async withGrantableScope(request: ValidRequest, userId: string): Promise<ValidRequest | undefined> {
    const requested = request.scope.split(' ');
    const grantable = await scopesHeld(requested, () => this.users.roleOf(userId));
    if (grantable.length === 0) return undefined;
    return grantable.length === requested.length ? request : { ...request, scope: grantable.join(' ') };
  }

  private async redirectWithCode(
    req: Request,
    res: Response,
    request: ValidRequest,
    session: CurrentSession,
    status: 302 | 303,
  ): Promise<void> {
    if (!(await this.answers.usedUp(res, request))) return;
    const { userId, authTime, sid, amr } = session;
    const code = await this.codeGrant.issueCode({ ...this.codeInput(request, req), userId, authTime, sid, amr });
    sendRedirect(res, status, this.validator.redirectTo(request.redirectUri, { code, state: request.state }));
  }

  private codeInput(request: ValidRequest, req: Request): CodeRequest {
    return {
      context: auditContextOf(req),
      client: request.client,
      scope: request.scope,
      resources: request.resources,
      redirectUri: request.sentRedirectUri,
      codeChallenge: request.codeChallenge,
      dpopJkt: request.dpopJkt,
      nonce: request.nonce,
    };
  }
}

/** Whether the session's sign-in reaches `level` (none asked: any does). */
function levelMet(session: CurrentSession, level: Acr | null): boolean {
  return level === null || meetsAcr(acrOfStored(session.amr), level);
}
