import { auditContextOf } from '../audit/audit-events';
import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiRedirect } from '../common/openapi';
import { Public } from '../auth/auth.decorators';
import { type AuthorizationRequestResult, AuthorizationRequestValidator, MAX_NONCE_LENGTH } from './authorization-request';
import { scopeDescription } from '../auth/scopes';
import { CodeGrantService, type CodeRequest } from './code-grant.service';
import { ConsentService } from './consent.service';
import { sessionCookie } from './cookies';
import { OAuthPages, sendHtml, sendRedirect } from './pages';
import { safeEqual } from './secrets';
import { type CurrentSession, SessionsService } from './sessions.service';

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
  ) {}

  @Get()
  @ApiQuery({ name: 'response_type', required: true, schema: { type: 'string', enum: ['code'] } })
  @ApiQuery({ name: 'client_id', required: true, schema: { type: 'string' } })
  @ApiQuery({
    name: 'redirect_uri',
    required: false,
    schema: { type: 'string', format: 'uri' },
    description: 'required when the client has several',
  })
  @ApiQuery({
    name: 'scope',
    required: false,
    schema: { type: 'string' },
    description: "space-separated; the client's scopes when omitted",
  })
  @ApiQuery({ name: 'state', required: false, schema: { type: 'string' } })
  @ApiQuery({
    name: 'code_challenge',
    required: false,
    schema: { type: 'string' },
    description: 'PKCE (RFC 7636), required for public clients',
  })
  @ApiQuery({ name: 'code_challenge_method', required: false, schema: { type: 'string', enum: ['S256'] } })
  @ApiQuery({
    name: 'nonce',
    required: false,
    schema: { type: 'string', maxLength: MAX_NONCE_LENGTH },
    description: 'OpenID Connect: repeated in the ID token of the code',
  })
  @ApiQuery({
    name: 'resource',
    required: false,
    schema: { type: 'array', items: { type: 'string', format: 'uri' } },
    style: 'form',
    explode: true,
    description: 'RFC 8707 resource indicators (repeatable): the aud of the tokens; the API when omitted',
  })
  @ApiRedirect(
    302,
    'With a live session and consent: to redirect_uri with code and state (or error and state); without a session: to /login',
  )
  @ApiHtml(200, 'The consent page (the client is not trusted and the scopes were not granted before)')
  @ApiHtml(400, 'An unknown client or redirect URI: an error page, never a redirect')
  async authorize(@Req() req: Request, @Res() res: Response): Promise<void> {
    const request = await this.validator.validate(req.query as Record<string, unknown>);
    if (request.kind === 'error' && request.selfRegistered) {
      sendHtml(res, 400, this.pages.error('Invalid authorization request', `${request.error}: ${request.description}`));
      return;
    }
    if (this.answeredError(request, res) || request.kind !== 'valid') return;

    if (request.client.trusted) {
      // No consent needed: the session is checked and the code written together (one statement on PostgreSQL).
      const code = await this.codeGrant.issueCodeInSession(sessionCookie.read(req), this.codeInput(request, req));
      if (code === undefined) res.redirect(302, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
      else sendRedirect(res, 302, this.validator.redirectTo(request.redirectUri, { code, state: request.state }));
      return;
    }
    // Any other client: the consent is read with the session, in one query.
    const session = await this.sessions.current(sessionCookie.read(req), request.client.id);
    if (!session) {
      res.redirect(302, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
      return;
    }
    const requested = request.scope.split(' ');
    const { consented } = session;
    if (!consented || requested.every((s) => consented.has(s))) {
      await this.redirectWithCode(req, res, request, session, 302);
      return;
    }
    sendHtml(
      res,
      200,
      this.pages.consent({
        clientName: request.client.name,
        scopes: requested.map((name) => ({ name, description: scopeDescription(name) })),
        csrf: session.csrfToken,
        params: { ...request.params, scope: request.scope },
      }),
    );
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
  @ApiRedirect(303, 'To redirect_uri with code and state (allow), or error=access_denied (deny) or another error')
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
    const request = await this.validator.validate(params);
    if (this.answeredError(request, res, 303) || request.kind !== 'valid') return;
    if (decision === 'allow') {
      await this.consents.record(session.userId, request.client.id, request.scope, auditContextOf(req));
      await this.redirectWithCode(req, res, request, session, 303);
      return;
    }
    if (decision === 'deny') {
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

  /** Answers the request's error, if it has one: an HTML page for a bad client, else a redirect. */
  private answeredError(request: AuthorizationRequestResult, res: Response, status: 302 | 303 = 302): boolean {
    if (request.kind === 'fatal') {
      sendHtml(res, 400, this.pages.error('Invalid authorization request', request.message));
      return true;
    }
    if (request.kind === 'error') {
      sendRedirect(
        res,
        status,
        this.validator.redirectTo(request.redirectUri, {
          error: request.error,
          error_description: request.description,
          state: request.state,
        }),
      );
      return true;
    }
    return false;
  }

  private async redirectWithCode(
    req: Request,
    res: Response,
    request: Extract<AuthorizationRequestResult, { kind: 'valid' }>,
    session: CurrentSession,
    status: 302 | 303,
  ): Promise<void> {
    const { userId, authTime, sid } = session;
    const code = await this.codeGrant.issueCode({ ...this.codeInput(request, req), userId, authTime, sid });
    sendRedirect(res, status, this.validator.redirectTo(request.redirectUri, { code, state: request.state }));
  }

  private codeInput(request: Extract<AuthorizationRequestResult, { kind: 'valid' }>, req: Request): CodeRequest {
    return {
      context: auditContextOf(req),
      client: request.client,
      scope: request.scope,
      resources: request.resources,
      redirectUri: request.sentRedirectUri,
      codeChallenge: request.codeChallenge,
      nonce: request.nonce,
    };
  }
}
