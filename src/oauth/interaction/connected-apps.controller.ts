import { auditContextOf } from '../../audit/audit-events';
import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { NoQueryParams } from '../../common/validation';
import { ConnectedAppsService } from './connected-apps.service';
import { sessionCookie } from './cookies';
import { OAuthPages, sendHtml, sendRedirect } from './pages';
import { safeEqual } from '../../crypto/secrets';
import { SessionsService } from './sessions.service';
import { UsersService } from '../../users/users.service';

export const CONNECTED_APPS_PATH = '/account/apps';
const BACK = { href: CONNECTED_APPS_PATH, label: 'Back to your connected apps' };

/**
 * The connected-apps page: a signed-in person sees the applications they let into their account and revokes them.
 * Public to the bearer guard: the login session cookie is its authentication, the session's CSRF token guards its
 * form (as on the consent page). HTML pages and redirects, so it writes the response.
 */
@Public()
@Controller('account/apps')
export class ConnectedAppsController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly apps: ConnectedAppsService,
    private readonly pages: OAuthPages,
    private readonly users: UsersService,
  ) {}

  @Get()
  @ApiHtml(200, 'The applications the signed-in person has granted access, each with a Revoke form, and a sign-out form')
  @ApiRedirect(302, `No login session: to /login?return_to=${CONNECTED_APPS_PATH}`)
  @ApiProblems(400)
  async show(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session) {
      sendRedirect(res, 302, `/login?return_to=${encodeURIComponent(CONNECTED_APPS_PATH)}`);
      return;
    }
    const [apps, email] = await Promise.all([this.apps.list(session.userId), this.users.emailOf(session.userId)]);
    sendHtml(res, 200, this.pages.connectedApps({ apps, csrf: session.csrfToken, signedInAs: email ?? '' }));
  }

  @Post('revoke')
  @ApiPageForm({ client_id: { type: 'string', maxLength: 64 }, csrf: { type: 'string' } }, ['client_id', 'csrf'])
  @ApiRedirect(303, `Revoked (its grants and the consent of the signed-in person): back to ${CONNECTED_APPS_PATH}`)
  @ApiPageFormErrors('A missing or malformed client_id, or a query parameter: an error page')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiHtml(404, 'A client the signed-in person has not granted access')
  async revoke(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session || typeof body.csrf !== 'string' || !safeEqual(body.csrf, session.csrfToken)) {
      sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Sign in and try again.', BACK));
      return;
    }
    const result = await this.apps.revoke(session.userId, body.client_id, auditContextOf(req));
    if (result === 'malformed') {
      sendHtml(res, 400, this.pages.error('Invalid request', 'The request does not name an application.', BACK));
      return;
    }
    if (result === 'not-connected') {
      sendHtml(res, 404, this.pages.error('Not connected', 'This application has no access to your account.', BACK));
      return;
    }
    sendRedirect(res, 303, CONNECTED_APPS_PATH);
  }
}
