import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { ApiHtml, ApiRedirect } from '../../common/openapi';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { sessionCookie } from './cookies';
import { OAuthPages, sendHtml, sendRedirect } from './pages';
import { safeReturnTo } from './return-to';
import { SessionsService } from './sessions.service';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { ACR_VALUES, type Acr } from '../../auth/acr';
import { PasskeysService } from '../../mfa/passkeys.service';
import { SignInSteps } from './sign-in-steps';

/** A signed-in person gives a stronger factor (step-up, RFC 9470), or signs in again with a passkey (max_age). */
@Public()
@Controller()
export class StepUpController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly pages: OAuthPages,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly steps: SignInSteps,
  ) {}

  @Get('login/step-up')
  @ApiQuery({ name: 'return_to', required: false, schema: { type: 'string' }, description: 'a relative path on this server' })
  @ApiQuery({ name: 'acr', required: false, schema: { type: 'string', enum: [...ACR_VALUES] }, description: 'the level to reach' })
  @ApiQuery({
    name: 'reauth',
    required: false,
    schema: { type: 'string', enum: ['1'] },
    description: 'max_age: the sign-in is too old, and a passkey signs the person in again',
  })
  @ApiHtml(200, "The signed-in person's stronger factor to give: a passkey, or (below phr) a code of their authenticator")
  @ApiRedirect(302, 'No login session: to /login with the same return_to')
  @ApiHtml(403, 'The person has no factor strong enough: a link to the sign-in security page')
  async stepUp(@Req() req: Request, @Res() res: Response): Promise<void> {
    const returnTo = safeReturnTo(req.query.return_to);
    const level = (ACR_VALUES as readonly unknown[]).includes(req.query.acr) ? (req.query.acr as Acr) : 'aal2';
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session) {
      sendRedirect(res, 302, `/login?return_to=${encodeURIComponent(returnTo)}`);
      return;
    }
    const [totp, passkey] = await Promise.all([this.secondFactors.required(session.userId), this.passkeys.has(session.userId)]);
    if (req.query.reauth === '1' && passkey) {
      // max_age: the sign-in is too old, not too weak; a passkey signs the person in again on its own.
      sendHtml(
        res,
        200,
        this.pages.secondFactor({ csrf: this.steps.csrfFor(req, res), totp: false, passkey, reauthenticate: { returnTo } }),
      );
      return;
    }
    const code = totp && level !== 'phr';
    if (!code && !passkey) {
      const what = level === 'phr' ? 'a passkey' : 'a passkey or an authenticator app';
      const back = { href: '/account/security', label: 'Sign-in security' };
      sendHtml(res, 403, this.pages.error('A stronger sign-in is needed', `This needs ${what}, and your account has none yet.`, back));
      return;
    }
    // The session stays as it is until the factor is given; then it is renewed with both sets of methods.
    await this.steps.startChallenge(res, session.userId, returnTo, session.amr ?? 'pwd');
    sendHtml(res, 200, this.pages.secondFactor({ csrf: this.steps.csrfFor(req, res), totp: code, passkey }));
  }
}
