import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { auditContextOf } from '../../audit/audit-events';
import { Public } from '../../auth/auth.decorators';
import { safeEqual } from '../../common/crypto/secrets';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { RateLimit } from '../../common/rate-limit/rate-limit';
import { NoQueryParams } from '../../common/validation';
import { AppConfig } from '../../config/app-config';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { UsersService } from '../../users/users.service';
import { sessionCookie } from './cookies';
import { type AccountSecurityPageView, OAuthPages, sendHtml, sendRedirect } from './pages';
import { type CurrentSession, SessionsService } from './sessions.service';

export const ACCOUNT_SECURITY_PATH = '/account/security';
const BACK = { href: ACCOUNT_SECURITY_PATH, label: 'Back to sign-in security' };

/**
 * The account's sign-in security page: a signed-in person sets up an authenticator app (TOTP), confirms it with a
 * first code and receives their recovery codes once, or removes it with a current code. Public to the bearer
 * guard: the login session cookie is its authentication and the session's CSRF token guards its forms.
 */
@Public()
@Controller('account/security')
export class AccountSecurityController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly users: UsersService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiHtml(200, "The state of the person's authenticator, with the form to set one up or to remove it")
  @ApiRedirect(302, `No login session: to /login?return_to=${ACCOUNT_SECURITY_PATH}`)
  @ApiProblems(400)
  async show(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session) {
      sendRedirect(res, 302, `/login?return_to=${encodeURIComponent(ACCOUNT_SECURITY_PATH)}`);
      return;
    }
    await this.render(res, 200, session);
  }

  @Post('totp')
  @ApiPageForm({ csrf: { type: 'string' } }, ['csrf'])
  @ApiHtml(200, 'A new authenticator to scan (QR code and key), with the form for its first code')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiHtml(409, 'An authenticator is set up already')
  @ApiPageFormErrors('A query parameter')
  async begin(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const label = (await this.users.emailOf(session.userId)) ?? session.userId;
    const enrolment = await this.secondFactors.beginTotp(session.userId, label, new URL(this.config.issuer).host);
    if (!enrolment) {
      await this.render(res, 409, session, { error: 'An authenticator is set up already: remove it first to set up another.' });
      return;
    }
    await this.render(res, 200, session, { enrolment: { qrSvg: enrolment.qrSvg, secret: enrolment.secret } });
  }

  @Post('totp/confirm')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiHtml(200, 'Confirmed: the recovery codes, shown this once')
  @ApiPageFormErrors('A code that does not match (or no authenticator being set up): the page again')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async confirm(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const codes = await this.secondFactors.confirmTotp(session.userId, codeOf(req), auditContextOf(req));
    if (!codes) {
      await this.render(res, 400, session, {
        error: 'The code does not match. Set up the authenticator again and enter its current code.',
      });
      return;
    }
    await this.render(res, 200, session, { recoveryCodes: codes });
  }

  @Post('totp/remove')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiRedirect(303, `Removed: back to ${ACCOUNT_SECURITY_PATH}`)
  @ApiPageFormErrors('A wrong or used code: the page again')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiHtml(409, "The person's role needs a second factor (MFA_REQUIRED_ROLES): it stays")
  @ApiProblems(429)
  @RateLimit('login')
  async remove(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const role = await this.users.roleOf(session.userId);
    if (role !== undefined && this.secondFactors.requiredFor(role)) {
      await this.render(res, 409, session, { error: 'Your account needs a second factor: the authenticator cannot be removed.' });
      return;
    }
    // A current code (or a recovery code), so that a session left open on a shared computer cannot remove it.
    const check = await this.secondFactors.verify(session.userId, codeOf(req), auditContextOf(req));
    if (!check.ok) {
      const error = check.locked
        ? 'Too many wrong codes: codes are refused for 15 minutes. Try again later.'
        : 'The code is not correct, or it was used already.';
      await this.render(res, 400, session, { error });
      return;
    }
    await this.secondFactors.remove(session.userId, `user:${session.userId}`, auditContextOf(req));
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }

  /** The session of a form post whose CSRF token matches it; else answers 403 and returns undefined. */
  private async checkedSession(req: Request, res: Response): Promise<CurrentSession | undefined> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session || typeof body.csrf !== 'string' || !safeEqual(body.csrf, session.csrfToken)) {
      sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Sign in and try again.', BACK));
      return undefined;
    }
    return session;
  }

  private async render(
    res: Response,
    status: number,
    session: CurrentSession,
    extra: Partial<AccountSecurityPageView> = {},
  ): Promise<void> {
    const state = await this.secondFactors.status(session.userId);
    sendHtml(res, status, this.pages.accountSecurity({ csrf: session.csrfToken, ...state, ...extra }));
  }
}

function codeOf(req: Request): string {
  const code = ((req.body ?? {}) as Record<string, unknown>).code;
  return typeof code === 'string' ? code.slice(0, 32) : '';
}
