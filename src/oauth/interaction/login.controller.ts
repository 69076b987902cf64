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
import { readCookie, sessionCookie, setCookie } from './cookies';
import { OAuthConfig } from '../oauth.config';
import { OAuthPages, sendHtml } from './pages';
import { safeReturnTo } from './return-to';
import { randomSecret, safeEqual } from '../../common/crypto/secrets';
import { SessionsService } from './sessions.service';
import { MAX_LOGIN_HINT_LENGTH, usableLoginHint } from '../oidc/oidc.scopes';

const LOGIN_CSRF_COOKIE = 'login_csrf';
const GENERIC_FAILURE = 'The email or password is not correct.';

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
  @ApiPageFormErrors('An email with control characters: the form again')
  @ApiHtml(401, 'Wrong email or password: the form again, with one generic message')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async login(@Req() req: Request, @Res() res: Response): Promise<void> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const cookieToken = readCookie(req, LOGIN_CSRF_COOKIE);
    if (typeof body.csrf !== 'string' || !cookieToken || !safeEqual(body.csrf, cookieToken)) {
      sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Go back and try again.'));
      return;
    }
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
    // Signing in again in a session of the same person (prompt=login, max_age) is a new login of that session; as
    // another person (switching accounts), the other person's session ends: its cookie is replaced, and a copy of
    // it must not outlive that.
    const current = await this.sessions.current(sessionCookie.read(req));
    if (current && current.userId !== user.id) await this.sessions.end(current, auditContextOf(req), { via: 'account switch' });
    const renewed = current?.userId === user.id ? await this.sessions.reauthenticate(current, auditContextOf(req)) : undefined;
    const secret = renewed ?? (await this.sessions.start(user.id, auditContextOf(req))).secret;
    sessionCookie.write(res, secret, { sessionTtl: this.oauthConfig.sessionTtl, secureCookies: this.config.secureCookies });
    res.redirect(303, returnTo);
  }

  @Post('logout')
  @ApiRedirect(303, 'The session is ended and its cookie cleared: to /login')
  async logout(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    if (session) await this.sessions.end(session, auditContextOf(req), { via: 'logout form' });
    sessionCookie.clear(res, this.config);
    res.redirect(303, '/login');
  }

  private csrfFor(req: Request, res: Response): string {
    const existing = readCookie(req, LOGIN_CSRF_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
    const token = randomSecret(24);
    setCookie(res, LOGIN_CSRF_COOKIE, token, { secure: this.config.secureCookies });
    return token;
  }
}
