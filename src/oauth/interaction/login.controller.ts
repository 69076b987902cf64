import { auditContextOf } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { CONTROL_CHARACTER } from '../../common/text';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { RateLimit } from '../../rate-limit/rate-limit';
import { AppConfig } from '../../config/app-config';
import { MetricsService } from '../../metrics/metrics.service';
import { PasswordHasher } from '../../users/password-hasher';
import { UsersService } from '../../users/users.service';
import { sessionCookie } from './cookies';
import { OAuthPages, sendHtml } from './pages';
import { safeReturnTo } from './return-to';
import { SessionsService } from './sessions.service';
import { safeEqual } from '../../crypto/secrets';
import { MAX_LOGIN_HINT_LENGTH, usableLoginHint } from '../oidc/oidc.scopes';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { PasskeysService } from '../../mfa/passkeys.service';
import { SignInSteps, GENERIC_FAILURE } from './sign-in-steps';
import { type SignInConnections, signInConnectionsOf } from './sign-in-connections';
import { ModuleRef } from '@nestjs/core';

/** The password step of a sign-in (the login form, double-submit CSRF token) and the logout form. */
@Public()
@Controller()
export class LoginController {
  constructor(
    private readonly users: UsersService,
    private readonly hasher: PasswordHasher,
    private readonly sessions: SessionsService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly steps: SignInSteps,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** Company sign-in, when a module offers it (looked up once, after every module is ready). */
  private get connections(): SignInConnections {
    return (this.signInConnections ??= signInConnectionsOf(this.moduleRef));
  }

  private signInConnections: SignInConnections | undefined;

  @Get('login')
  @ApiQuery({ name: 'return_to', required: false, schema: { type: 'string' }, description: 'a relative path on this server' })
  @ApiQuery({
    name: 'login_hint',
    required: false,
    schema: { type: 'string', maxLength: MAX_LOGIN_HINT_LENGTH },
    description: 'OpenID Connect login_hint: prefills the email field, and nothing else',
  })
  @ApiHtml(200, 'The login form')
  async show(@Req() req: Request, @Res() res: Response): Promise<void> {
    const returnTo = safeReturnTo(req.query.return_to);
    const email = usableLoginHint(req.query.login_hint);
    const connections = await this.connections.links(returnTo);
    sendHtml(res, 200, this.pages.login({ returnTo, csrf: this.steps.csrfFor(req, res), email, connections }));
  }

  @Post('login')
  @ApiPageForm(
    {
      email: { type: 'string' },
      password: { type: 'string', format: 'password' },
      csrf: { type: 'string' },
      return_to: { type: 'string', description: 'a relative path on this server (anything else goes to /)' },
    },
    ['email', 'password', 'csrf'],
  )
  @ApiRedirect(303, 'Signed in: the session cookie is set, to return_to')
  @ApiHtml(200, 'The password matched and the person has an authenticator: the form for its code (POST /login/code)')
  @ApiPageFormErrors('An email with control characters: the form again')
  @ApiHtml(401, 'Wrong email or password: the form again, with one generic message')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async login(@Req() req: Request, @Res() res: Response): Promise<void> {
    const form = this.steps.checkedForm(req, res);
    if (!form) return;
    const { body, cookieToken } = form;
    const returnTo = safeReturnTo(body.return_to);
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const fail = () => {
      this.metrics.loginFailed();
      sendHtml(res, 401, this.pages.login({ returnTo, csrf: cookieToken, error: GENERIC_FAILURE, email: email.slice(0, 254) }));
    };

    if (CONTROL_CHARACTER.test(email)) {
      const error = 'The email address contains characters that are not allowed.';
      sendHtml(res, 400, this.pages.login({ returnTo, csrf: cookieToken, error }));
      return;
    }
    if (!email || email.length > 254 || !password || password.length > 128) {
      await this.hasher.verifyNothing(password.slice(0, 128));
      await this.audit.record({ type: 'login.failed', actor: 'anonymous', details: { reason: 'incomplete form' } }, auditContextOf(req));
      fail();
      return;
    }
    const user = await this.users.credentials(email);
    // A domain a connection serves: its people sign in there (they have no password here); a local account of that
    // domain that has one keeps it.
    const upstream = user && UsersService.hasOwnPassword(user) ? undefined : await this.connections.routeFor(email, returnTo);
    if (upstream) {
      res.redirect(303, upstream);
      return;
    }
    const ok = user ? await this.hasher.verify(user.passwordHash, password) : await this.hasher.verifyNothing(password);
    if (!user || !ok) {
      // Never the email as typed: a password typed into the wrong field would end up in the trail.
      const details = { reason: user ? 'wrong password' : 'unknown email' };
      await this.audit.record({ type: 'login.failed', actor: 'anonymous', userId: user?.id ?? null, details }, auditContextOf(req));
      fail();
      return;
    }
    await this.users.upgradePasswordHash(user, password);
    const [totp, passkey] = await Promise.all([this.secondFactors.required(user.id), this.passkeys.has(user.id)]);
    if (totp || passkey) {
      // The password matched; the session waits for the second factor (five tries, five minutes).
      await this.steps.startChallenge(res, user.id, returnTo);
      sendHtml(res, 200, this.pages.secondFactor({ csrf: cookieToken, totp, passkey }));
      return;
    }
    if (this.secondFactors.requiredFor(user.role)) {
      // MFA_REQUIRED_ROLES: no session before the person has set up an authenticator (the challenge's five minutes).
      const challenge = await this.steps.startChallenge(res, user.id, returnTo);
      const enrolment = await this.secondFactors.beginSignInEnrolment(challenge, user.id, email, this.steps.issuerHost);
      sendHtml(res, 200, this.pages.signInEnrolment({ csrf: cookieToken, qrSvg: enrolment.qrSvg, secret: enrolment.secret }));
      return;
    }
    await this.steps.signIn(req, res, user.id, returnTo, ['pwd']);
  }

  @Post('logout')
  @ApiPageForm({ csrf: { type: 'string', description: "the session's CSRF token, which the connected-apps page's form carries" } }, [])
  @ApiRedirect(303, 'The session is ended and its cookie cleared (or there was none): to /login')
  @ApiPageFormErrors('A body that cannot be read')
  @ApiHtml(403, "A session whose CSRF token the form does not carry (another site's form): the session stays")
  async logout(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    // A cross-site form must not sign the person out: the token is the session's own (a synchronizer token).
    const csrf = (req.body as Record<string, unknown> | undefined)?.csrf;
    if (session && (typeof csrf !== 'string' || !safeEqual(csrf, session.csrfToken))) {
      sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Go back and try again.'));
      return;
    }
    if (session) await this.sessions.end(session, auditContextOf(req), { via: 'logout form' });
    sessionCookie.clear(res);
    res.redirect(303, '/login');
  }
}
