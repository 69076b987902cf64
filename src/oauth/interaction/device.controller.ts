import { auditContextOf } from '../../audit/audit-events';
import { Controller, Get, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { RateLimit } from '../../rate-limit/rate-limit';
import { safeEqual } from '../../crypto/secrets';
import { DeviceAuthorizationService, type DeviceStepUp } from '../device/device-authorization.service';
import { sessionCookie } from './cookies';
import { OAuthPages, sendHtml, sendRedirect } from './pages';
import { type CurrentSession, SessionsService } from './sessions.service';

export const DEVICE_PATH = '/device';
const UNKNOWN_CODE = 'This code is not valid: check it against your device, or start again there (a code lasts ten minutes).';

/**
 * The verification page of the device authorization grant (RFC 8628 3.3): a signed-in person enters the code the
 * device shows (or follows `verification_uri_complete`), sees which application asks for what, and allows or
 * denies. The login session cookie authenticates, its CSRF token guards the forms, and guessing codes is
 * rate-limited per address (the login budget). HTML pages and redirects, so it writes the response.
 */
@Public()
@Controller('device')
export class DeviceController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly device: DeviceAuthorizationService,
    private readonly pages: OAuthPages,
  ) {}

  @Get()
  @ApiHtml(200, 'The code form, or (with a valid user_code) the request to allow or deny')
  @ApiRedirect(302, "No login session: to /login, which comes back here; a sign-in below the client's minimum_acr: to /login/step-up")
  @ApiProblems(400, 429)
  @RateLimit('login')
  async show(@Req() req: Request, @Res() res: Response, @Query('user_code') userCode: unknown): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session) {
      const back = typeof userCode === 'string' ? `${DEVICE_PATH}?user_code=${encodeURIComponent(userCode)}` : DEVICE_PATH;
      sendRedirect(res, 302, `/login?return_to=${encodeURIComponent(back)}`);
      return;
    }
    if (userCode === undefined) {
      sendHtml(res, 200, this.pages.deviceCode({ csrf: session.csrfToken }));
      return;
    }
    await this.answerCode(res, session, userCode, 302);
  }

  @Post()
  @ApiPageForm({ user_code: { type: 'string', maxLength: 64 }, csrf: { type: 'string' } }, ['user_code', 'csrf'])
  @ApiHtml(200, 'The request of that code, to allow or deny')
  @ApiRedirect(303, "A sign-in below the client's minimum_acr: to /login/step-up, which comes back to the code")
  @ApiPageFormErrors('A code that is unknown, expired or answered already: the form again')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async enter(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    await this.answerCode(res, session, (req.body as Record<string, unknown>).user_code, 303);
  }

  @Post('decision')
  @ApiPageForm(
    { user_code: { type: 'string', maxLength: 64 }, csrf: { type: 'string' }, decision: { type: 'string', enum: ['allow', 'deny'] } },
    ['user_code', 'csrf', 'decision'],
  )
  @ApiHtml(200, 'Allowed or denied: the person goes back to the device')
  @ApiRedirect(303, "Allowed with a sign-in below the client's minimum_acr: to /login/step-up first, nothing approved")
  @ApiPageFormErrors('No decision, or a request no longer waiting (expired, answered already): an error page')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  async decide(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const body = req.body as Record<string, unknown>;
    if (body.decision !== 'allow' && body.decision !== 'deny') {
      sendHtml(res, 400, this.pages.error('Invalid request', 'Choose Allow or Deny.', { href: DEVICE_PATH, label: 'Enter a code' }));
      return;
    }
    const allow = body.decision === 'allow';
    const answered = await this.device.answer(body.user_code, allow, session, auditContextOf(req));
    if (typeof answered === 'object') {
      stepUpFirst(res, 303, answered);
      return;
    }
    if (!answered) {
      sendHtml(res, 400, this.pages.deviceCode({ csrf: session.csrfToken, error: UNKNOWN_CODE }));
      return;
    }
    sendHtml(res, 200, this.pages.deviceDone(allow));
  }

  private async answerCode(res: Response, session: CurrentSession, userCode: unknown, status: 302 | 303): Promise<void> {
    const pending = await this.device.pending(userCode, session);
    if (pending && 'stepUp' in pending) {
      stepUpFirst(res, status, pending);
      return;
    }
    if (!pending || pending.scopes.length === 0) {
      const typed = typeof userCode === 'string' ? userCode.slice(0, 16) : undefined;
      sendHtml(res, 400, this.pages.deviceCode({ csrf: session.csrfToken, userCode: typed, error: UNKNOWN_CODE }));
      return;
    }
    sendHtml(res, 200, this.pages.deviceConsent({ csrf: session.csrfToken, ...pending }));
  }

  /** The session of a form post whose CSRF token matches it; else a 403 page, and undefined. */
  private async checkedSession(req: Request, res: Response): Promise<CurrentSession | undefined> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session || typeof body.csrf !== 'string' || !safeEqual(body.csrf, session.csrfToken)) {
      sendHtml(
        res,
        403,
        this.pages.error('Request refused', 'The form has expired. Sign in and try again.', { href: DEVICE_PATH, label: 'Enter a code' }),
      );
      return undefined;
    }
    return session;
  }
}

/** The person steps up to the client's minimum level (`/login/step-up`, as /authorize sends them) and comes back to the code. */
function stepUpFirst(res: Response, status: 302 | 303, needed: DeviceStepUp): void {
  const back = `${DEVICE_PATH}?user_code=${needed.userCode}`;
  sendRedirect(res, status, `/login/step-up?return_to=${encodeURIComponent(back)}&acr=${needed.stepUp}`);
}
