import type { Request, Response } from 'express';
import { Injectable } from '@nestjs/common';
import { choseOwnRedirectUris } from '../../clients/client-metadata';
import { sessionCookie } from '../../interaction/cookies';
import { returnToAfterLogin } from '../../interaction/return-to';
import { OAuthPages, sendHtml, sendRedirect } from '../../interaction/pages';
import { type CurrentSession, SessionsService } from '../../interaction/sessions.service';
import { PasskeysService } from '../../../mfa/passkeys.service';
import { SecondFactorsService } from '../../../mfa/second-factors.service';
import { PushedRequestsService } from '../../par/pushed-requests.service';
import { type AuthorizationRequestResult, AuthorizationRequestValidator } from './authorization-request';
import { answerClientError } from './client-error-answer';
import { asksForLogin } from './login-freshness';

type ValidRequest = Extract<AuthorizationRequestResult, { kind: 'valid' }>;

/**
 * The answers of /authorize other than a code or the consent page: an error (a page, or back to the client), a
 * login or a step-up to go through first, and a pushed request already used.
 */
@Injectable()
export class AuthorizeAnswers {
  constructor(
    private readonly validator: AuthorizationRequestValidator,
    private readonly pages: OAuthPages,
    private readonly sessions: SessionsService,
    private readonly passkeys: PasskeysService,
    private readonly secondFactors: SecondFactorsService,
    private readonly pushedRequests: PushedRequestsService,
  ) {}

  /** No scope left for the person: at GET /authorize no page was seen yet, so an untrusted URI gets one. */
  noGrantableScope(res: Response, request: ValidRequest, status: 302 | 303 = 302): void {
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
  async loginNeeded(req: Request, res: Response, request: ValidRequest): Promise<void> {
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
  async usedUp(res: Response, request: ValidRequest): Promise<boolean> {
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
  async stepUpNeeded(req: Request, res: Response, request: ValidRequest, session: CurrentSession, status: 302 | 303): Promise<void> {
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
  interactionRequired(res: Response, request: ValidRequest, error: string, description: string): void {
    this.toClient(res, request, error, description, choseOwnRedirectUris(request.client), 302);
  }

  /**
   * Answers the request's error, if it has one: an HTML page for a bad client, else a redirect (at GET, a page with
   * a link for a client that chose its own redirect URIs; the consent form's post comes after a page).
   */
  answeredError(request: AuthorizationRequestResult, res: Response, status: 302 | 303 = 302): boolean {
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
}
