import { Controller, Get, Post, Query, Req, Res } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import type { Request, Response } from 'express';
import { auditContextOf } from '../audit/audit-events';
import { Public } from '../auth/auth.decorators';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems } from '../common/openapi';
import { CONTROL_CHARACTER, EMAIL_ADDRESS } from '../common/text';
import { NoQueryParams } from '../common/validation';
import { OAuthPages, SignInSteps, sendHtml } from '../oauth';
import { RateLimit } from '../rate-limit/rate-limit';
import { PasswordResetsService } from './password-resets.service';

const SENT = 'If an account has this address, a link to reset its password is on its way. It works once, for 15 minutes.';
const UNAVAILABLE = 'Password reset by e-mail is not available on this service. Ask an administrator to reset your password.';
const DEAD_LINK = 'This link is invalid, was already used, or has expired. Ask for a new one.';

/** `GET /reset-password`: the link's secret (checked by the service: anything but a live link is the same page). */
export class ResetLinkQueryDto {
  @ApiPropertyOptional({ description: 'the secret of the link sent by e-mail' })
  @IsOptional()
  @IsString()
  token?: string;
}

function field(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  return typeof value === 'string' ? value : '';
}

/** The self-service password reset pages: ask for a link, then set a new password through it. */
@Public()
@Controller()
export class PasswordResetController {
  constructor(
    private readonly resets: PasswordResetsService,
    private readonly pages: OAuthPages,
    private readonly steps: SignInSteps,
  ) {}

  @Get('forgot-password')
  @ApiHtml(200, 'The form that asks for the account e-mail (or, without mail, how to get a reset)')
  @ApiProblems(400)
  ask(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): void {
    if (!this.resets.available) return sendHtml(res, 200, this.pages.notice('Reset your password', UNAVAILABLE));
    sendHtml(res, 200, this.pages.forgotPassword({ csrf: this.steps.csrfFor(req, res) }));
  }

  @Post('forgot-password')
  @ApiPageForm({ email: { type: 'string' }, csrf: { type: 'string' } }, ['email', 'csrf'])
  @ApiHtml(200, 'The same answer whether or not the address has an account')
  @ApiPageFormErrors('Not an e-mail address: the form again')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiHtml(503, 'Mail is not configured')
  @ApiProblems(429)
  @RateLimit('login')
  send(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): void {
    const form = this.steps.checkedForm(req, res);
    if (!form) return;
    if (!this.resets.available) return sendHtml(res, 503, this.pages.notice('Reset your password', UNAVAILABLE));
    const email = field(form.body, 'email').trim();
    if (email.length > 254 || !EMAIL_ADDRESS.test(email) || CONTROL_CHARACTER.test(email)) {
      return sendHtml(res, 400, this.pages.forgotPassword({ csrf: form.cookieToken, error: 'Enter an e-mail address.' }));
    }
    this.resets.requestInBackground(email, auditContextOf(req));
    sendHtml(res, 200, this.pages.notice('Check your e-mail', SENT));
  }

  @Get('reset-password')
  @ApiHtml(200, 'The form for a new password')
  @ApiPageFormErrors('A link that is unknown, used or expired (problem+json: a query parameter that is not token)')
  async show(@Req() req: Request, @Res() res: Response, @Query() query: ResetLinkQueryDto): Promise<void> {
    const token = query.token ?? '';
    if (!(await this.resets.isLive(token))) return this.deadLink(res);
    sendHtml(res, 200, this.pages.resetPassword({ token, csrf: this.steps.csrfFor(req, res) }));
  }

  @Post('reset-password')
  @ApiPageForm({ token: { type: 'string' }, password: { type: 'string', format: 'password' }, csrf: { type: 'string' } }, [
    'token',
    'password',
    'csrf',
  ])
  @ApiHtml(200, 'The password is set; every session and grant of the person has ended')
  @ApiPageFormErrors('A password of the wrong length (the form again), or a link that is unknown, used or expired')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async reset(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const form = this.steps.checkedForm(req, res);
    if (!form) return;
    const token = field(form.body, 'token');
    const password = field(form.body, 'password');
    if (password.length < 12 || password.length > 128) {
      if (!(await this.resets.isLive(token))) return this.deadLink(res);
      const error = 'The password must be 12 to 128 characters.';
      return sendHtml(res, 400, this.pages.resetPassword({ token, csrf: form.cookieToken, error }));
    }
    if (!(await this.resets.reset(token, password, auditContextOf(req)))) return this.deadLink(res);
    sendHtml(res, 200, this.pages.notice('Password set', 'Your new password is set, and you were signed out everywhere. Sign in with it.'));
  }

  private deadLink(res: Response): void {
    sendHtml(res, 400, this.pages.error('Link not valid', DEAD_LINK, { href: '/forgot-password', label: 'Ask for a new link' }));
  }
}
