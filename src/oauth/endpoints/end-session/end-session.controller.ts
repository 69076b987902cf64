import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { auditContextOf } from '../../../audit/audit-events';
import { Public } from '../../../auth/auth.decorators';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiRedirect } from '../../../common/openapi';
import { AppConfig } from '../../../config/app-config';
import { sessionCookie } from '../../interaction/cookies';
import { EndSessionService, type LogoutRequest } from './end-session.service';
import { OAuthPages, sendHtml, sendRedirect } from '../../interaction/pages';
import { leavingPage } from '../../interaction/leaving-page';
import { safeEqual } from '../../../crypto/secrets';
import { type CurrentSession, type LogoutVia, SessionsService } from '../../interaction/sessions.service';

type ValidLogout = Extract<LogoutRequest, { kind: 'valid' }>;

const LOGOUT_FIELDS = {
  id_token_hint: { type: 'string', description: 'an ID token this server issued to the client (expired is fine)' },
  client_id: { type: 'string' },
  post_logout_redirect_uri: { type: 'string', format: 'uri', description: 'registered for the client' },
  state: { type: 'string', description: 'returned to post_logout_redirect_uri' },
  logout_hint: { type: 'string', description: 'accepted, not used' },
  ui_locales: { type: 'string', description: 'accepted, not used' },
} as const;

const SIGNED_OUT = ['Signed out', 'You are signed out of your account here.'] as const;

/**
 * OpenID Connect RP-Initiated Logout 1.0: the `end_session_endpoint` (GET and POST) and the confirmation page it
 * shows when the request does not carry an ID token of the current session. HTML and redirects, so it writes the
 * response.
 */
@Public()
@Controller('end-session')
export class EndSessionController {
  constructor(
    private readonly endSession: EndSessionService,
    private readonly sessions: SessionsService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiQuery({ name: 'id_token_hint', required: false, schema: LOGOUT_FIELDS.id_token_hint })
  @ApiQuery({ name: 'client_id', required: false, schema: LOGOUT_FIELDS.client_id })
  @ApiQuery({ name: 'post_logout_redirect_uri', required: false, schema: LOGOUT_FIELDS.post_logout_redirect_uri })
  @ApiQuery({ name: 'state', required: false, schema: LOGOUT_FIELDS.state })
  @ApiQuery({ name: 'logout_hint', required: false, schema: LOGOUT_FIELDS.logout_hint })
  @ApiQuery({ name: 'ui_locales', required: false, schema: LOGOUT_FIELDS.ui_locales })
  @ApiRedirect(302, 'Signed out (or no session) on an ID token of the client: to post_logout_redirect_uri with state')
  @ApiHtml(
    200,
    'The "Sign out?" page (no ID token of this session), or "Signed out": without a redirect URI, or with a link to one no ID token of the client vouches for',
  )
  @ApiHtml(400, 'An ID token hint, client or post_logout_redirect_uri that is not valid: an error page, never a redirect')
  async get(@Req() req: Request, @Res() res: Response): Promise<void> {
    await this.logout(req.query as Record<string, unknown>, req, res, 302);
  }

  @Post()
  @ApiPageForm(LOGOUT_FIELDS, [])
  @ApiRedirect(303, 'To GET /end-session with the same parameters, which carries the session cookie')
  @ApiPageFormErrors('A parameter sent twice or not as text: an error page, never a redirect')
  post(@Req() req: Request, @Res() res: Response): void {
    // A relying party's form posts from its own site, and the browser sends no SameSite=Lax cookie with a cross-site
    // POST: the session could not be found, let alone ended. The same request as a top-level GET carries it.
    const body = (req.body ?? {}) as Record<string, unknown>;
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(body)) {
      if (typeof value !== 'string') {
        sendHtml(res, 400, this.pages.error('Invalid sign-out request', `${name.slice(0, 100)} must be sent once, as text.`));
        return;
      }
      query.append(name, value);
    }
    sendRedirect(res, 303, `/end-session${query.size ? `?${query.toString()}` : ''}`);
  }

  @Post('confirm')
  @ApiPageForm(
    {
      csrf: { type: 'string' },
      decision: { type: 'string', enum: ['logout', 'stay'] },
      client_id: LOGOUT_FIELDS.client_id,
      post_logout_redirect_uri: LOGOUT_FIELDS.post_logout_redirect_uri,
      state: LOGOUT_FIELDS.state,
    },
    ['csrf', 'decision'],
  )
  @ApiRedirect(303, "Signed out: to an operator's client's post_logout_redirect_uri with state")
  @ApiHtml(200, '"Signed out" (with a link to the redirect URI of a client that chose its own), or "Still signed in" (decision=stay)')
  @ApiPageFormErrors('A client or post_logout_redirect_uri that is not valid, or no decision: an error page')
  @ApiHtml(403, 'No session, or a CSRF token that does not match it')
  async confirm(@Req() req: Request, @Res() res: Response): Promise<void> {
    const { csrf, decision, ...params } = (req.body ?? {}) as Record<string, unknown>;
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session || typeof csrf !== 'string' || !safeEqual(csrf, session.csrfToken)) {
      sendHtml(
        res,
        403,
        this.pages.error('Request refused', 'The sign-out form is not valid any more.', { href: '/account/apps', label: 'Your account' }),
      );
      return;
    }
    const request = await this.endSession.validate({ ...params, id_token_hint: undefined });
    if (this.answeredInvalid(request, res) || request.kind !== 'valid') return;
    if (decision === 'logout') {
      await this.end(req, res, request, session, 'end session confirmed', 303, this.endSession.redirectsOnItsOwn(request, session, true));
      return;
    }
    if (decision === 'stay') {
      sendHtml(res, 200, this.pages.notice('Still signed in', 'You are still signed in to your account here.'));
      return;
    }
    sendHtml(res, 400, this.pages.error('Invalid request', 'Choose Sign out or Stay signed in.'));
  }

  private async logout(raw: Record<string, unknown>, req: Request, res: Response, status: 302 | 303): Promise<void> {
    const request = await this.endSession.validate(raw);
    if (this.answeredInvalid(request, res) || request.kind !== 'valid') return;
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session) {
      // Nothing to end here (already signed out): the client's logout goes on.
      sessionCookie.clear(res);
      this.finish(res, request, status, this.endSession.redirectsOnItsOwn(request, null));
      return;
    }
    const { hint } = request;
    if (hint && hint.sid !== null && hint.sid === session.sid && hint.sub === session.userId) {
      await this.end(req, res, request, session, 'end session', status, this.endSession.redirectsOnItsOwn(request, session));
      return;
    }
    // No ID token of this session: anyone could have sent the browser here, so the person decides.
    sendHtml(
      res,
      200,
      this.pages.logoutConfirm({
        clientName: request.client?.name ?? null,
        csrf: session.csrfToken,
        params: {
          client_id: request.client?.id,
          post_logout_redirect_uri: request.redirectUri ?? undefined,
          state: request.redirectUri === null ? undefined : request.state,
        },
      }),
    );
  }

  private async end(
    req: Request,
    res: Response,
    request: ValidLogout,
    session: CurrentSession,
    via: LogoutVia,
    status: 302 | 303,
    redirect: boolean,
  ) {
    await this.sessions.end(session, auditContextOf(req), { via, clientId: request.client?.id ?? null });
    sessionCookie.clear(res);
    this.finish(res, request, status, redirect);
  }

  /** The redirect, when it may happen on its own (`redirect`); else "Signed out", with a link to the URI if any. */
  private finish(res: Response, request: ValidLogout, status: 302 | 303, redirect: boolean): void {
    if (request.redirectUri === null) {
      sendHtml(res, 200, this.pages.notice(...SIGNED_OUT));
      return;
    }
    const href = this.endSession.redirectTo(request.redirectUri, request.state);
    if (redirect) sendRedirect(res, status, href);
    else sendHtml(res, 200, leavingPage(this.pages, { title: SIGNED_OUT[0], message: SIGNED_OUT[1], error: false, href }));
  }

  private answeredInvalid(request: LogoutRequest, res: Response): boolean {
    if (request.kind !== 'invalid') return false;
    sendHtml(res, 400, this.pages.error('Invalid sign-out request', request.message));
    return true;
  }
}
