import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { RateLimit } from '../common/rate-limit/rate-limit';
import { AppConfig } from '../config/app-config';
import { UsersService } from '../users/users.service';
import { Public } from './auth.decorators';
import { readCookie, setCookie } from './cookies';
import { errorPage, loginPage, sendPage } from './pages';
import { PasswordHasher } from './password-hasher';
import { safeReturnTo } from './return-to';
import { randomSecret, safeEqual } from './secrets';
import { SessionsService } from './sessions.service';

const LOGIN_CSRF_COOKIE = 'login_csrf';
const GENERIC_FAILURE = 'The email or password is not correct.';

/** The login form (double-submit CSRF token) and logout. */
@Public()
@Controller()
export class LoginController {
  constructor(
    private readonly users: UsersService,
    private readonly hasher: PasswordHasher,
    private readonly sessions: SessionsService,
    private readonly config: AppConfig,
  ) {}

  @Get('login')
  show(@Req() req: Request, @Res() res: Response): void {
    const returnTo = safeReturnTo(req.query.return_to);
    sendPage(res, 200, 'Sign in', loginPage({ returnTo, csrf: this.csrfFor(req, res) }));
  }

  @Post('login')
  @RateLimit('login')
  async login(@Req() req: Request, @Res() res: Response): Promise<void> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const cookieToken = readCookie(req, LOGIN_CSRF_COOKIE);
    if (typeof body.csrf !== 'string' || !cookieToken || !safeEqual(body.csrf, cookieToken)) {
      sendPage(res, 403, 'Request refused', errorPage('Request refused', 'The form has expired. Go back and try again.'));
      return;
    }
    const returnTo = safeReturnTo(body.return_to);
    const email = typeof body.email === 'string' ? body.email.trim() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const fail = () =>
      sendPage(res, 401, 'Sign in', loginPage({ returnTo, csrf: cookieToken, error: GENERIC_FAILURE, email: email.slice(0, 254) }));

    if (!email || email.length > 254 || !password || password.length > 128) {
      await this.hasher.verifyNothing(password.slice(0, 128));
      fail();
      return;
    }
    const user = await this.users.credentials(email);
    const ok = user ? await this.hasher.verify(user.passwordHash, password) : await this.hasher.verifyNothing(password);
    if (!user || !ok) {
      fail();
      return;
    }
    await this.sessions.start(res, user.id);
    res.redirect(303, returnTo);
  }

  @Post('logout')
  async logout(@Req() req: Request, @Res() res: Response): Promise<void> {
    await this.sessions.end(req, res);
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
