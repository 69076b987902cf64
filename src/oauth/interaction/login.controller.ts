import { auditContextOf } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { CONTROL_CHARACTER } from '../../common/text';
import { NoQueryParams } from '../../common/validation';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { RateLimit } from '../../common/rate-limit/rate-limit';
import { AppConfig } from '../../config/app-config';
import { MetricsService } from '../../metrics/metrics.service';
import { PasswordHasher } from '../../users/password-hasher';
import { UsersService } from '../../users/users.service';
import { clearCookie, readCookie, sessionCookie, setCookie } from './cookies';
import { OAuthConfig } from '../oauth.config';
import { OAuthPages, sendHtml, sendRedirect } from './pages';
import { safeReturnTo } from './return-to';
import { randomSecret, safeEqual } from '../../common/crypto/secrets';
import { type AuthenticationMethods, SessionsService } from './sessions.service';
import { MAX_LOGIN_HINT_LENGTH, usableLoginHint } from '../oidc/oidc.scopes';
import type { LoginChallengeRow } from '../../mfa/second-factors.repository';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { combinedAmr } from '../../mfa/authentication-methods';
import { ACR_VALUES, type Acr } from '../../auth/acr';
import { CHALLENGE_TTL_SECONDS, type PasskeySignIn, PasskeysService } from '../../mfa/passkeys.service';
import { ApiBody, ApiOkResponse } from '@nestjs/swagger';
import { problem, sendProblem } from '../../common/problem';

const LOGIN_CSRF_COOKIE = 'login_csrf';
/** Names a sign-in whose password matched and that waits for its second factor (see SecondFactorsService). */
const LOGIN_CHALLENGE_COOKIE = 'login_challenge';
/** Binds a WebAuthn challenge to the browser it was handed to (see PasskeysService). */
export const WEBAUTHN_CHALLENGE_COOKIE = 'webauthn_challenge';
const PASSKEY_REFUSED = 'That passkey could not be used to sign in. Try again, or use your password.';
const GENERIC_FAILURE = 'The email or password is not correct.';
const WRONG_CODE = 'The code is not correct, or it was used already.';
const LOCKED = {
  'for-now': 'Too many wrong codes: codes from your app are refused for 15 minutes. A recovery code still works.',
  'for-good':
    'Too many wrong codes: codes from your app are refused until you sign in with a recovery code. Without one, ask an administrator to reset your second factors.',
};

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
    private readonly passkeys: PasskeysService,
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
    await this.users.upgradePasswordHash(user, password);
    const [totp, passkey] = await Promise.all([this.secondFactors.required(user.id), this.passkeys.has(user.id)]);
    if (totp || passkey) {
      // The password matched; the session waits for the second factor (five tries, five minutes).
      await this.startChallenge(res, user.id, returnTo);
      sendHtml(res, 200, this.pages.secondFactor({ csrf: cookieToken, totp, passkey }));
      return;
    }
    if (this.secondFactors.requiredFor(user.role)) {
      // MFA_REQUIRED_ROLES: no session before the person has set up an authenticator (the challenge's five minutes).
      const challenge = await this.startChallenge(res, user.id, returnTo);
      const enrolment = await this.secondFactors.beginSignInEnrolment(challenge, user.id, email, this.issuerHost);
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
    const codes = await this.secondFactors.confirmSignInEnrolment(waiting.secret, challenge.userId, code, auditContextOf(req));
    if (!codes) {
      const label = (await this.users.emailOf(challenge.userId)) ?? challenge.userId;
      const enrolment = await this.secondFactors.signInEnrolment(waiting.secret, challenge.userId, label, this.issuerHost);
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
      const passkey = await this.passkeys.has(challenge.userId);
      const error = check.locked ? LOCKED[check.locked] : WRONG_CODE;
      sendHtml(res, 401, this.pages.secondFactor({ csrf: cookieToken, totp: true, passkey, error }));
      return;
    }
    await this.endChallenge(res, waiting.secret);
    await this.signIn(req, res, challenge.userId, challenge.returnTo, combinedAmr(challenge.priorAmr, ['pwd', 'otp', 'mfa']));
  }

  @Post('login/passkey/options')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['csrf', 'step'],
      properties: { csrf: { type: 'string' }, step: { type: 'string', enum: ['sign-in', 'second-factor', 'reauth'] } },
    },
  })
  @ApiOkResponse({
    description:
      'WebAuthn request options (PublicKeyCredentialRequestOptionsJSON) for navigator.credentials.get, user verification required; ' +
      'the webauthn_challenge cookie binds their challenge to this browser for five minutes. `sign-in`: any passkey the browser ' +
      "offers; `second-factor`: the passkeys of the person whose password matched (the login_challenge cookie's sign-in); " +
      '`reauth`: the passkeys of the signed-in person',
  })
  @ApiProblems(400, 401, 403, 429)
  @RateLimit('login')
  async passkeyOptions(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const body = doubleSubmitted(req)?.body;
    if (!body) {
      sendProblem(res, problem(403, 'The form has expired: load the sign-in page again.', req.path));
      return;
    }
    let userId: string | undefined;
    if (body.step === 'reauth') {
      userId = (await this.sessions.current(sessionCookie.read(req)))?.userId;
      if (!userId) {
        sendProblem(res, problem(401, 'This sign-in has expired: sign in again.', req.path));
        return;
      }
    } else if (body.step === 'second-factor') {
      const secret = readCookie(req, LOGIN_CHALLENGE_COOKIE);
      userId = secret ? (await this.secondFactors.peekChallenge(secret))?.userId : undefined;
      if (!userId) {
        sendProblem(res, problem(401, 'This sign-in has expired: sign in again.', req.path));
        return;
      }
    } else if (body.step !== 'sign-in') {
      sendProblem(res, problem(400, 'step must be sign-in, second-factor or reauth.', req.path));
      return;
    }
    const { options, secret } = await this.passkeys.authenticationOptions(userId);
    setCookie(res, WEBAUTHN_CHALLENGE_COOKIE, secret, { maxAgeSeconds: CHALLENGE_TTL_SECONDS, secure: this.config.secureCookies });
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json(options);
  }

  @Post('login/passkey')
  @ApiPageForm(
    {
      response: { type: 'string', description: "the browser's answer (a PublicKeyCredential as JSON)" },
      step: { type: 'string', enum: ['sign-in', 'second-factor', 'reauth'] },
      csrf: { type: 'string' },
      return_to: { type: 'string', description: 'sign-in, reauth: a relative path on this server (anything else goes to /)' },
    },
    ['response', 'step', 'csrf'],
  )
  @ApiRedirect(303, "Signed in: the session cookie is set, to return_to (to the sign-in's own after the password)")
  @ApiPageFormErrors('A body that cannot be read, or a query parameter')
  @ApiHtml(401, 'A passkey that is unknown, of another person, not verified, or an answer to no live challenge of this browser')
  @ApiHtml(403, 'No CSRF cookie, or a token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async passkey(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const form = this.checkedForm(req, res);
    if (!form) return;
    const { body, cookieToken } = form;
    const answer = parsedAnswer(body.response);
    const webauthnSecret = readCookie(req, WEBAUTHN_CHALLENGE_COOKIE);
    clearCookie(res, WEBAUTHN_CHALLENGE_COOKIE, this.config.secureCookies);
    if (body.step === 'second-factor') {
      const waiting = await this.waitingSignIn(req, res, form);
      if (!waiting) return;
      const { challenge } = waiting;
      const result = await this.passkeys.authenticate(webauthnSecret, answer, 'second-factor', challenge.userId);
      if (!result.ok) {
        await this.passkeyRefused(req, result);
        const totp = await this.secondFactors.required(challenge.userId);
        sendHtml(res, 401, this.pages.secondFactor({ csrf: cookieToken, totp, passkey: true, error: PASSKEY_REFUSED }));
        return;
      }
      await this.endChallenge(res, waiting.secret);
      await this.signIn(req, res, result.userId, challenge.returnTo, combinedAmr(challenge.priorAmr, result.amr));
      return;
    }
    const returnTo = safeReturnTo(body.return_to);
    if (body.step === 'reauth') {
      // A signed-in person confirming it is them (max_age): one of their own passkeys, a whole sign-in on its own.
      const session = await this.sessions.current(sessionCookie.read(req));
      if (!session) {
        this.signInExpired(res);
        return;
      }
      const result = await this.passkeys.authenticate(webauthnSecret, answer, 'second-factor', session.userId);
      if (!result.ok) {
        await this.passkeyRefused(req, result);
        const view = { csrf: cookieToken, totp: false, passkey: true, reauthenticate: { returnTo }, error: PASSKEY_REFUSED };
        sendHtml(res, 401, this.pages.secondFactor(view));
        return;
      }
      await this.signIn(
        req,
        res,
        result.userId,
        returnTo,
        result.amr.filter((method) => method !== 'pwd'),
      );
      return;
    }
    const result = await this.passkeys.authenticate(webauthnSecret, answer, 'sign-in');
    if (!result.ok) {
      await this.passkeyRefused(req, result);
      sendHtml(res, 401, this.pages.login({ returnTo, csrf: cookieToken, error: PASSKEY_REFUSED }));
      return;
    }
    await this.signIn(req, res, result.userId, returnTo, result.amr);
  }

  /** A refused passkey: audited with why (the person it names, when one), counted as a failed sign-in. */
  private async passkeyRefused(req: Request, result: Extract<PasskeySignIn, { ok: false }>): Promise<void> {
    const details = { reason: `passkey: ${result.reason}` };
    await this.audit.record({ type: 'login.failed', actor: 'anonymous', userId: result.userId ?? null, details }, auditContextOf(req));
    this.metrics.loginFailed();
  }

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
      sendHtml(res, 200, this.pages.secondFactor({ csrf: this.csrfFor(req, res), totp: false, passkey, reauthenticate: { returnTo } }));
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
    await this.startChallenge(res, session.userId, returnTo, session.amr ?? 'pwd');
    sendHtml(res, 200, this.pages.secondFactor({ csrf: this.csrfFor(req, res), totp: code, passkey }));
  }

  /** A sign-in whose password matched (or a session stepping up) waiting for a second factor: its cookie (five minutes). */
  private async startChallenge(res: Response, userId: string, returnTo: string, priorAmr: string | null = null): Promise<string> {
    const challenge = await this.secondFactors.startChallenge(userId, returnTo, priorAmr);
    setCookie(res, LOGIN_CHALLENGE_COOKIE, challenge, { maxAgeSeconds: 300, secure: this.config.secureCookies });
    return challenge;
  }

  /**
   * A second-step form (`/login/code`, `/login/enrol`): its CSRF token checked, the sign-in its cookie names (one
   * try counted) and the code typed; else answered (403, or 401 back to the password) and undefined.
   */
  private async waitingSignIn(
    req: Request,
    res: Response,
    checked?: { body: Record<string, unknown>; cookieToken: string },
  ): Promise<{ challenge: LoginChallengeRow; secret: string; code: string; cookieToken: string } | undefined> {
    const form = checked ?? this.checkedForm(req, res);
    if (!form) return undefined;
    const secret = readCookie(req, LOGIN_CHALLENGE_COOKIE);
    const challenge = secret ? await this.secondFactors.tryChallenge(secret) : undefined;
    // A step-up strengthens a live session of the same person: after a logout, its factor alone signs no one in.
    const stepUpOrphaned =
      challenge !== undefined &&
      challenge.priorAmr !== null &&
      (await this.sessions.current(sessionCookie.read(req)))?.userId !== challenge.userId;
    if (!secret || !challenge || stepUpOrphaned) {
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
    const form = doubleSubmitted(req);
    if (!form) sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Go back and try again.'));
    return form;
  }

  private csrfFor(req: Request, res: Response): string {
    const existing = readCookie(req, LOGIN_CSRF_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
    const token = randomSecret(24);
    setCookie(res, LOGIN_CSRF_COOKIE, token, { secure: this.config.secureCookies });
    return token;
  }
}

/** A sign-in post's fields (a form, or the page's JSON) when its CSRF token matches the cookie (double submit). */
function doubleSubmitted(req: Request): { body: Record<string, unknown>; cookieToken: string } | undefined {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const cookieToken = readCookie(req, LOGIN_CSRF_COOKIE);
  return typeof body.csrf === 'string' && cookieToken && safeEqual(body.csrf, cookieToken) ? { body, cookieToken } : undefined;
}

/** The `response` field of a passkey form: the browser's answer as JSON (at most 64 KiB), or undefined. */
function parsedAnswer(field: unknown): unknown {
  if (typeof field !== 'string' || field.length > 65_536) return undefined;
  try {
    return JSON.parse(field) as unknown;
  } catch {
    return undefined;
  }
}
