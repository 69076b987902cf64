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
import { choseOwnRedirectUris } from '../../clients/client-metadata';
import { ClientMetadataDocuments } from '../../clients/cimd/client-metadata.service';
import { ConsentService } from '../../interaction/consent.service';
import { sessionCookie } from '../../interaction/cookies';
import { returnToAfterLogin } from '../../interaction/return-to';
import { OAuthPages, sendHtml, sendRedirect } from '../../interaction/pages';
import { safeEqual } from '../../../common/crypto/secrets';
import { type CurrentSession, SessionsService } from '../../interaction/sessions.service';
import { type Acr, acrOfStored, meetsAcr } from '../../../auth/acr';
import { PasskeysService } from '../../../mfa/passkeys.service';
import { SecondFactorsService } from '../../../mfa/second-factors.service';
import { PushedRequestsService } from '../../par/pushed-requests.service';
import { asksForLogin, minAuthTimeOf, pushedLoginAnswered } from './login-freshness';
import { answerClientError } from './client-error-answer';
import { consentPageView } from './consent-page-view';

type ValidRequest = Extract<AuthorizationRequestResult, { kind: 'valid' }>;

/** The authorization endpoint (RFC 6749 4.1) with its login redirect and consent page: redirects and HTML, so it writes the response. */
@Public()
@Controller('authorize')
export class AuthorizeController {
  constructor(
    private readonly validator: AuthorizationRequestValidator,
    private readonly sessions: SessionsService,
    private readonly codeGrant: CodeGrantService,
    private readonly consents: ConsentService,
    private readonly pages: OAuthPages,
    private readonly metadataDocuments: ClientMetadataDocuments,
    private readonly users: UsersService,
    private readonly passkeys: PasskeysService,
    private readonly secondFactors: SecondFactorsService,
    private readonly pushedRequests: PushedRequestsService,
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
    if (this.answeredError(request, res) || request.kind !== 'valid') return;

    const { prompt } = request;
    if (asksForLogin(request)) {
      await this.loginNeeded(req, res, request);
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
      if (code === undefined) await this.loginNeeded(req, res, request);
      else sendRedirect(res, 302, this.validator.redirectTo(request.redirectUri, { code, state: request.state }));
      return;
    }
    // Any other client: the consent is read with the session, in one query.
    const session = await this.sessions.current(sessionCookie.read(req), request.client.id);
    // id_token_hint: the session must be the hinted person's (Core 3.1.2.1); another person's needs a login.
    if (!session || session.authTime < minAuthTime || (request.hintedUser !== null && session.userId !== request.hintedUser)) {
      await this.loginNeeded(req, res, request);
      return;
    }
    if (!levelMet(session, request.acr)) {
      await this.stepUpNeeded(req, res, request, session, 302);
      return;
    }
    const granted = await this.withGrantableScope(request, session.userId);
    if (!granted) {
      this.noGrantableScope(res, request);
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
      this.interactionRequired(res, request, 'consent_required', 'The user has not allowed this client these scopes.');
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
    if (this.answeredError(validated, res, 303) || validated.kind !== 'valid') return;
    // A pushed request's prompt=login or max_age holds here too: back to /authorize, which asks for the login.
    if (!pushedLoginAnswered(validated, session)) {
      sendRedirect(res, 303, `/authorize?${new URLSearchParams(validated.params as Record<string, string>).toString()}`);
      return;
    }
    // The client's own minimum level holds here too (the form carries no acr_values: those were met before it).
    if (!levelMet(session, validated.acr)) {
      await this.stepUpNeeded(req, res, validated, session, 303);
      return;
    }
    // The form may have been changed: scopes bound to a role the person lacks are left out here too.
    const request = await this.withGrantableScope(validated, session.userId);
    if (!request) {
      this.noGrantableScope(res, validated, 303);
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
      if (!(await this.usedUp(res, request))) return;
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

  /** No scope left for the person: at GET /authorize no page was seen yet, so an untrusted URI gets one. */
  private noGrantableScope(res: Response, request: ValidRequest, status: 302 | 303 = 302): void {
    const untrusted = status === 302 && choseOwnRedirectUris(request.client);
    this.toClient(res, request, 'invalid_scope', 'The requested scopes need a role the user does not have.', untrusted, status);
  }

  private toClient(res: Response, request: ValidRequest, error: string, description: string, untrusted: boolean, status: 302 | 303) {
    const location = this.validator.redirectTo(request.redirectUri, { error, error_description: description, state: request.state });
    answerClientError(res, this.pages, { location, error, description, untrusted, status });
  }

  /**
   * A login is needed (none, an old one, or prompt=login): the login page, which comes back to this request
   * without `prompt=login` and `max_age` (a pushed request: by its request_uri, and only a login after this one
   * answers it); with prompt=none, `login_required` instead.
   */
  private async loginNeeded(req: Request, res: Response, request: ValidRequest): Promise<void> {
    if (request.prompt.has('none')) {
      this.interactionRequired(res, request, 'login_required', 'The user is not signed in, or not recently enough.');
      return;
    }
    // A pushed request comes back by its request_uri: the login it asks for is settled in its stored row instead.
    const returnTo = request.pushed ? req.originalUrl : returnToAfterLogin(req.originalUrl, request.prompt, request.maxAge);
    if (request.pushed && (request.maxAge !== null || asksForLogin(request))) await this.pushedRequests.settle(request.pushed);
    // max_age: the person of a live session that is only too old confirms it is them with a passkey (a whole
    // sign-in on its own) instead of signing in afresh.
    if (request.maxAge !== null && !asksForLogin(request)) {
      const session = await this.sessions.current(sessionCookie.read(req));
      if (session && (request.hintedUser === null || session.userId === request.hintedUser) && (await this.passkeys.has(session.userId))) {
        sendRedirect(res, 302, `/login/step-up?return_to=${encodeURIComponent(returnTo)}&reauth=1`);
        return;
      }
    }
    const hint = request.loginHint === null ? '' : `&login_hint=${encodeURIComponent(request.loginHint)}`;
    res.redirect(302, `/login?return_to=${encodeURIComponent(returnTo)}${hint}`);
  }

  /**
   * A pushed request yields one answer (RFC 9126 4: request_uri is single-use): it is used up here, on any
   * instance; a second use gets an error page. True for a request that was not pushed.
   */
  private async usedUp(res: Response, request: ValidRequest): Promise<boolean> {
    if (!request.pushed || (await this.pushedRequests.use(request.pushed.id))) return true;
    sendHtml(
      res,
      400,
      this.pages.error('Invalid authorization request', 'This authorization request was answered already, or it expired.'),
    );
    return false;
  }

  /**
   * The session's sign-in is weaker than the request's level: the person confirms it is them with a stronger
   * factor (`/login/step-up`: a passkey, or for `aal2` a code of their authenticator) and comes back to this
   * request, instead of signing in afresh. prompt=none: `interaction_required`; a person with no factor strong
   * enough: `unmet_authentication_requirements` (OpenID Connect Unmet Authentication Requirements 1.0).
   */
  private async stepUpNeeded(
    req: Request,
    res: Response,
    request: ValidRequest,
    session: CurrentSession,
    status: 302 | 303,
  ): Promise<void> {
    const level = request.acr!;
    if (request.prompt.has('none')) {
      this.interactionRequired(res, request, 'interaction_required', `The request needs a sign-in of level ${level}.`);
      return;
    }
    const [passkey, totp] = await Promise.all([this.passkeys.has(session.userId), this.secondFactors.required(session.userId)]);
    if (!passkey && !(totp && level !== 'phr')) {
      // As any answer before a page: shown, not redirected, to a client that chose its own redirect URIs.
      this.interactionRequired(res, request, 'unmet_authentication_requirements', `The user has no way to sign in at level ${level}.`);
      return;
    }
    // Back to this request as sent (GET /authorize), or to its start when the consent form was posted.
    const sent = Object.entries(request.params).filter((entry): entry is [string, string] => entry[1] !== undefined);
    const back = req.method === 'GET' ? req.originalUrl : `/authorize?${new URLSearchParams(sent).toString()}`;
    sendRedirect(res, status, `/login/step-up?return_to=${encodeURIComponent(back)}&acr=${level}`);
  }

  /**
   * prompt=none and a page would be needed: the error goes back to the client (Core 3.1.2.6), except to a client
   * that registered itself or is known by its metadata document's URL, whose redirect URI is anyone's choice: a page
   * with a link there, as for its other errors before the person has seen a page (RFC 9700 4.11.2).
   */
  private interactionRequired(res: Response, request: ValidRequest, error: string, description: string): void {
    this.toClient(res, request, error, description, choseOwnRedirectUris(request.client), 302);
  }

  /**
   * Answers the request's error, if it has one: an HTML page for a bad client, else a redirect (at GET, a page with
   * a link for a client that chose its own redirect URIs; the consent form's post comes after a page).
   */
  private answeredError(request: AuthorizationRequestResult, res: Response, status: 302 | 303 = 302): boolean {
    if (request.kind === 'fatal') {
      sendHtml(res, 400, this.pages.error('Invalid authorization request', request.message));
      return true;
    }
    if (request.kind === 'error') {
      const { error, description } = request;
      const location = this.validator.redirectTo(request.redirectUri, { error, error_description: description, state: request.state });
      answerClientError(res, this.pages, { location, error, description, untrusted: request.selfRegistered && status === 302, status });
      return true;
    }
    return false;
  }

  private async redirectWithCode(
    req: Request,
    res: Response,
    request: ValidRequest,
    session: CurrentSession,
    status: 302 | 303,
  ): Promise<void> {
    if (!(await this.usedUp(res, request))) return;
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
