import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { auditContextOf } from '../../audit/audit-events';
import { Public } from '../../auth/auth.decorators';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { RateLimit } from '../../rate-limit/rate-limit';
import { NoQueryParams } from '../../common/validation';
import { AppConfig } from '../../config/app-config';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { PasskeysService } from '../../mfa/passkeys.service';
import { sessionCookie } from './cookies';
import { UsersService } from '../../users/users.service';
import { sendRedirect } from './pages';
import { SessionsService } from './sessions.service';
import { AccountSecurityPage, codeOf } from './account-security-page';
import { ACCOUNT_SECURITY_PATH, FactorChangeRules } from './factor-change-rules';

const AUTHENTICATOR_ACTIVE = 'An authenticator is set up already: remove it first to set up another.';

/**
 * The account's sign-in security page: a signed-in person sets up an authenticator app (TOTP), confirms it with a
 * first code and receives their recovery codes once, or removes it with a current code (its passkeys are
 * `AccountPasskeysController`'s). A person whose role needs a second factor keeps at least one. Public to the bearer
 * guard: the login session cookie is its authentication and the session's CSRF token guards its forms.
 */
@Public()
@Controller('account/security')
export class AccountSecurityController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly users: UsersService,
    private readonly config: AppConfig,
    private readonly rules: FactorChangeRules,
    private readonly page: AccountSecurityPage,
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
    await this.page.render(res, 200, session);
  }

  @Post('totp')
  @ApiPageForm({ csrf: { type: 'string' } }, ['csrf'])
  @ApiHtml(200, 'A new authenticator to scan (QR code and key), with the form for its first code')
  @ApiHtml(
    403,
    'No login session, a CSRF token that does not match it, a password-only session of a person with a factor, or (the ' +
      'first factor) a sign-in more than 5 minutes old: the page links to the password again',
  )
  @ApiHtml(409, 'An authenticator is set up already')
  @ApiPageFormErrors('A query parameter')
  async begin(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.page.checkedSession(req, res);
    if (!session) return;
    if ((await this.secondFactors.status(session.userId)).totp === 'active') {
      await this.page.render(res, 409, session, { error: AUTHENTICATOR_ACTIVE });
      return;
    }
    if (await this.page.confirmFirst(res, session, 'add')) return;
    const label = (await this.users.emailOf(session.userId)) ?? session.userId;
    const enrolment = await this.secondFactors.beginTotp(session.userId, label, new URL(this.config.issuer).host);
    if (!enrolment) {
      await this.page.render(res, 409, session, { error: AUTHENTICATOR_ACTIVE });
      return;
    }
    await this.page.render(res, 200, session, { enrolment: { qrSvg: enrolment.qrSvg, secret: enrolment.secret } });
  }

  @Post('totp/confirm')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiHtml(200, 'Confirmed: the recovery codes, shown this once')
  @ApiPageFormErrors('A code that does not match (or no authenticator being set up): the page again')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async confirm(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.page.checkedSession(req, res);
    if (!session) return;
    const codes = await this.secondFactors.confirmTotp(session.userId, codeOf(req), auditContextOf(req));
    if (!codes) {
      await this.page.render(res, 400, session, {
        error: 'The code does not match. Set up the authenticator again and enter its current code.',
      });
      return;
    }
    await this.page.render(res, 200, session, { recoveryCodes: codes });
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
    const session = await this.page.checkedSession(req, res);
    if (!session) return;
    const keepOne = await this.page.policyNeedsFactor(session.userId);
    const lastFactor = () =>
      this.page.render(res, 409, session, {
        error: 'Your account needs a second factor: add a passkey before you remove the authenticator.',
      });
    if (keepOne && !(await this.passkeys.has(session.userId))) {
      await lastFactor();
      return;
    }
    // A current code (or a recovery code), so that a session left open on a shared computer cannot remove it.
    const check = await this.secondFactors.verify(session.userId, codeOf(req), auditContextOf(req));
    if (!check.ok) {
      const error = check.locked
        ? 'Too many wrong codes: codes are refused for 15 minutes. Try again later.'
        : 'The code is not correct, or it was used already.';
      await this.page.render(res, 400, session, { error });
      return;
    }
    // Checked again as it goes: a passkey removed meanwhile (another tab) may have made it the last factor.
    if ((await this.secondFactors.removeOwn(session.userId, auditContextOf(req), keepOne)) === 'last') {
      await lastFactor();
      return;
    }
    await this.rules.removed(session, auditContextOf(req));
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }
}
