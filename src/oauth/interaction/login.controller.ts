import { auditContextOf } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { CONTROL_CHARACTER } from '../../common/text';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { RateLimit } from '../../common/rate-limit/rate-limit';
import { AppConfig } from '../../config/app-config';
import { MetricsService } from '../../metrics/metrics.service';
import { PasswordHasher } from '../../users/password-hasher';
import { UsersService } from '../../users/users.service';
import { clearCookie, readCookie, sessionCookie, setCookie } from './cookies';
import { OAuthConfig } from '../oauth.config';
import { OAuthPages, sendHtml } from './pages';
import { safeReturnTo } from './return-to';
import { randomSecret, safeEqual } from '../../common/crypto/secrets';
import { type AuthenticationMethods, SessionsService } from './sessions.service';
import { MAX_LOGIN_HINT_LENGTH, usableLoginHint } from '../oidc/oidc.scopes';
import type { LoginChallengeRow } from '../../mfa/second-factors.repository';
import { SecondFactorsService } from '../../mfa/second-factors.service';

const LOGIN_CSRF_COOKIE = 'login_csrf';
/** Names a sign-in whose password matched and that waits for its second factor (see SecondFactorsService). */
const LOGIN_CHALLENGE_COOKIE = 'login_challenge';
const GENERIC_FAILURE = 'The email or password is not correct.';
const WRONG_CODE = 'The code is not correct, or it was used already.';
const LOCKED = 'Too many wrong codes: codes are refused for 15 minutes. Try again later.';

/** The login form (double-submit CSRF token) and logout. HTML pages and redirects, so it writes the response. */
@Public()
@Controller()
export class LoginController {
  constructor(
    private readonly users: UsersService,
    private readonly hasher: PasswordHasher,
    private readonly sessions: SessionsService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
    private readonly oauthConfig: OAuthConfig,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly secondFactors: SecondFactorsService,
  ) {}

  @Get('login')
  @ApiQuery({ name: 'return_to', required: false, schema: { type: 'string' }, description: 'a relative path on this server' })
  @ApiQuery({
    name: 'login_hint',
    required: false,
    schema: { type: 'string', maxLength: MAX_LOGIN_HINT_LENGTH },
    description: 'OpenID Connect login_hint: prefills the email field, and nothing else',
  })
  @ApiHtml(200, 'The login form')
  show(@Req() req: Request, @Res() res: Response): void {
    const returnTo = safeReturnTo(req.query.return_to);
    const email = usableLoginHint(req.query.login_hint);
    sendHtml(res, 200, this.pages.login({ returnTo, csrf: this.csrfFor(req, res), email }));
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
    const form = this.checkedForm(req, res);
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
    const ok = user ? await this.hasher.verify(user.passwordHash, password) : await this.hasher.verifyNothing(password);
    if (!user || !ok) {
      // Never the email as typed: a password typed into the wrong field would end up in the trail.
      const details = { reason: user ? 'wrong password' : 'unknown email' };
      await this.audit.record({ type: 'login.failed', actor: 'anonymous', userId: user?.id ?? null, details }, auditContextOf(req));
      fail();
      return;
    }
    if (await this.secondFactors.required(user.id)) {
      // The password matched; the session waits for the second factor (five tries, five minutes).
      await this.startChallenge(res, user.id, returnTo);
      sendHtml(res, 200, this.pages.secondFactor({ csrf: cookieToken }));
      return;
    }
    if (this.secondFactors.requiredFor(user.role)) {
      // MFA_REQUIRED_ROLES: no session before the person has set up an authenticator (the challenge's five minutes).
      await this.startChallenge(res, user.id, returnTo);
      const enrolment = (await this.secondFactors.enrolment(user.id, email, this.issuerHost))!;
      sendHtml(res, 200, this.pages.signInEnrolment({ csrf: cookieToken, qrSvg: enrolment.qrSvg, secret: enrolment.secret }));
      return;
    }
    await this.signIn(req, res, user.id, returnTo, ['pwd']);
  }

  @Post('login/enrol')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiHtml(200, 'Set up and signed in: the session cookie is set, and the recovery codes are shown once, with a link to return_to')
  @ApiPageFormErrors('A code that does not match: the authenticator to scan again')
  @ApiHtml(401, 'No sign-in waiting for an authenticator (expired, or too many wrong codes): a link back to the login form')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async enrol(@Req() req: Request, @Res() res: Response): Promise<void> {
    const waiting = await this.waitingSignIn(req, res);
    if (!waiting) return;
    const { challenge, code, cookieToken } = waiting;
    const codes = await this.secondFactors.confirmTotp(challenge.userId, code, auditContextOf(req));
    if (!codes) {
      const label = (await this.users.emailOf(challenge.userId)) ?? challenge.userId;
      const enrolment = await this.secondFactors.enrolment(challenge.userId, label, this.issuerHost);
      if (!enrolment) {
        this.signInExpired(res);
        return;
      }
      const error = 'The code does not match. Enter the code your app shows now.';
      sendHtml(res, 400, this.pages.signInEnrolment({ csrf: cookieToken, qrSvg: enrolment.qrSvg, secret: enrolment.secret, error }));
      return;
    }
    await this.endChallenge(res, waiting.secret);
    await this.startSession(req, res, challenge.userId, ['pwd', 'otp', 'mfa']);
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
    const waiting = await this.waitingSignIn(req, res);
    if (!waiting) return;
    const { challenge, code, cookieToken } = waiting;
    const check = await this.secondFactors.verify(challenge.userId, code, auditContextOf(req));
    if (!check.ok) {
      const details = { reason: check.locked ? 'second factor locked' : 'wrong second factor' };
      await this.audit.record({ type: 'login.failed', actor: 'anonymous', userId: challenge.userId, details }, auditContextOf(req));
      this.metrics.loginFailed();
      sendHtml(res, 401, this.pages.secondFactor({ csrf: cookieToken, error: check.locked ? LOCKED : WRONG_CODE }));
      return;
    }
    await this.endChallenge(res, waiting.secret);
    await this.signIn(req, res, challenge.userId, challenge.returnTo, ['pwd', 'otp', 'mfa']);
  }

  /** A sign-in whose password matched, waiting for a second factor: its cookie (five minutes). */
  private async startChallenge(res: Response, userId: string, returnTo: string): Promise<void> {
    const challenge = await this.secondFactors.startChallenge(userId, returnTo);
    setCookie(res, LOGIN_CHALLENGE_COOKIE, challenge, { maxAgeSeconds: 300, secure: this.config.secureCookies });
  }

  /**
   * A second-step form (`/login/code`, `/login/enrol`): its CSRF token checked, the sign-in its cookie names (one
   * try counted) and the code typed; else answered (403, or 401 back to the password) and undefined.
   */
  private async waitingSignIn(
    req: Request,
    res: Response,
  ): Promise<{ challenge: LoginChallengeRow; secret: string; code: string; cookieToken: string } | undefined> {
    const form = this.checkedForm(req, res);
    if (!form) return undefined;
    const secret = readCookie(req, LOGIN_CHALLENGE_COOKIE);
    const challenge = secret ? await this.secondFactors.tryChallenge(secret) : undefined;
    if (!secret || !challenge) {
      this.signInExpired(res);
      return undefined;
    }
    const code = typeof form.body.code === 'string' ? form.body.code.slice(0, 32) : '';
    return { challenge, secret, code, cookieToken: form.cookieToken };
  }

  /** The second step is done: the waiting sign-in and its cookie go. */
  private async endChallenge(res: Response, secret: string): Promise<void> {
    await this.secondFactors.endChallenge(secret);
    clearCookie(res, LOGIN_CHALLENGE_COOKIE, this.config.secureCookies);
  }

  /** No sign-in waiting for its second factor (expired, out of tries, never started): back to the password. */
  private signInExpired(res: Response): void {
    clearCookie(res, LOGIN_CHALLENGE_COOKIE, this.config.secureCookies);
    const again = { href: '/login', label: 'Sign in again' };
    sendHtml(res, 401, this.pages.error('Sign in again', 'This sign-in has expired or had too many wrong codes.', again));
  }

  /** What an authenticator app shows as the account's issuer. */
  private get issuerHost(): string {
    return new URL(this.config.issuer).host;
  }

  /** Starts (or renews) the person's session and sends them on to `returnTo`. */
  private async signIn(req: Request, res: Response, userId: string, returnTo: string, amr: AuthenticationMethods): Promise<void> {
    await this.startSession(req, res, userId, amr);
    res.redirect(303, returnTo);
  }

  /** Starts the person's session (a new login of theirs when the browser has one already), setting its cookie. */
  private async startSession(req: Request, res: Response, userId: string, amr: AuthenticationMethods): Promise<void> {
    // Signing in again in a session of the same person (prompt=login, max_age) is a new login of that session; as
    // another person (switching accounts), the other person's session ends: its cookie is replaced, and a copy of
    // it must not outlive that.
    const current = await this.sessions.current(sessionCookie.read(req));
    if (current && current.userId !== userId) await this.sessions.end(current, auditContextOf(req), { via: 'account switch' });
    const renewed = current?.userId === userId ? await this.sessions.reauthenticate(current, auditContextOf(req), amr) : undefined;
    const secret = renewed ?? (await this.sessions.start(userId, auditContextOf(req), amr)).secret;
    sessionCookie.write(res, secret, { sessionTtl: this.oauthConfig.sessionTtl, secureCookies: this.config.secureCookies });
  }

  @Post('logout')
  @ApiRedirect(303, 'The session is ended and its cookie cleared: to /login')
  async logout(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    if (session) await this.sessions.end(session, auditContextOf(req), { via: 'logout form' });
    sessionCookie.clear(res, this.config);
    res.redirect(303, '/login');
  }

  /** A sign-in form's fields, when its CSRF token matches the cookie (double submit); else answers 403. */
  private checkedForm(req: Request, res: Response): { body: Record<string, unknown>; cookieToken: string } | undefined {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const cookieToken = readCookie(req, LOGIN_CSRF_COOKIE);
    if (typeof body.csrf !== 'string' || !cookieToken || !safeEqual(body.csrf, cookieToken)) {
      sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Go back and try again.'));
      return undefined;
    }
    return { body, cookieToken };
  }

  private csrfFor(req: Request, res: Response): string {
    const existing = readCookie(req, LOGIN_CSRF_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
    const token = randomSecret(24);
    setCookie(res, LOGIN_CSRF_COOKIE, token, { secure: this.config.secureCookies });
    return token;
  }
}
