import { auditContextOf } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { Controller, Post, Req, Res } from '@nestjs/common';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { RateLimit } from '../../rate-limit/rate-limit';
import { MetricsService } from '../../metrics/metrics.service';
import { UsersService } from '../../users/users.service';
import { OAuthPages, sendHtml } from './pages';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { combinedAmr } from '../../mfa/authentication-methods';
import { PasskeysService } from '../../mfa/passkeys.service';
import { SignInSteps, WRONG_CODE, LOCKED } from './sign-in-steps';

/** The second step of a sign-in: a code of the person's authenticator, or setting one up where the role needs it. */
@Public()
@Controller()
export class SecondFactorController {
  constructor(
    private readonly users: UsersService,
    private readonly pages: OAuthPages,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly steps: SignInSteps,
  ) {}

  @Post('login/enrol')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiHtml(200, 'Set up and signed in: the session cookie is set, and the recovery codes are shown once, with a link to return_to')
  @ApiPageFormErrors('A code that does not match: the authenticator to scan again')
  @ApiHtml(401, 'No sign-in waiting for an authenticator (expired, or too many wrong codes): a link back to the login form')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async enrol(@Req() req: Request, @Res() res: Response): Promise<void> {
    const waiting = await this.steps.waitingSignIn(req, res);
    if (!waiting) return;
    const { challenge, code, cookieToken } = waiting;
    const codes = await this.secondFactors.confirmSignInEnrolment(waiting.secret, challenge.userId, code, auditContextOf(req));
    if (!codes) {
      const label = (await this.users.emailOf(challenge.userId)) ?? challenge.userId;
      const enrolment = await this.secondFactors.signInEnrolment(waiting.secret, challenge.userId, label, this.steps.issuerHost);
      if (!enrolment) {
        this.steps.signInExpired(res);
        return;
      }
      const error = 'The code does not match. Enter the code your app shows now.';
      sendHtml(res, 400, this.pages.signInEnrolment({ csrf: cookieToken, qrSvg: enrolment.qrSvg, secret: enrolment.secret, error }));
      return;
    }
    await this.steps.endChallenge(res, waiting.secret);
    await this.steps.startSession(req, res, challenge.userId, ['pwd', 'otp', 'mfa']);
    sendHtml(res, 200, this.pages.signInRecoveryCodes(codes, challenge.returnTo));
  }

  @Post('login/code')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiRedirect(303, 'Signed in: the session cookie is set, to the return_to of the sign-in')
  @ApiPageFormErrors('A body that cannot be read')
  @ApiHtml(401, 'A wrong or used code (the form again), or no sign-in waiting for one (a link back to the login form)')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async code(@Req() req: Request, @Res() res: Response): Promise<void> {
    const waiting = await this.steps.waitingSignIn(req, res);
    if (!waiting) return;
    const { challenge, code, cookieToken } = waiting;
    const check = await this.secondFactors.verify(challenge.userId, code, auditContextOf(req));
    if (!check.ok) {
      const details = { reason: check.locked ? 'second factor locked' : 'wrong second factor' };
      await this.audit.record({ type: 'login.failed', actor: 'anonymous', userId: challenge.userId, details }, auditContextOf(req));
      this.metrics.loginFailed();
      const passkey = await this.passkeys.has(challenge.userId);
      const error = check.locked ? LOCKED[check.locked] : WRONG_CODE;
      sendHtml(res, 401, this.pages.secondFactor({ csrf: cookieToken, totp: true, passkey, error }));
      return;
    }
    await this.steps.endChallenge(res, waiting.secret);
    await this.steps.signIn(req, res, challenge.userId, challenge.returnTo, combinedAmr(challenge.priorAmr, ['pwd', 'otp', 'mfa']));
  }
}
