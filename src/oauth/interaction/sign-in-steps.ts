import { auditContextOf } from '../../audit/audit-events';
import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppConfig } from '../../config/app-config';
import { clearCookie, readCookie, sessionCookie, setCookie } from './cookies';
import { OAuthConfig } from '../oauth.config';
import { OAuthPages, sendHtml } from './pages';
import { randomSecret, safeEqual } from '../../crypto/secrets';
import { type AuthenticationMethods, SessionsService } from './sessions.service';
import type { LoginChallengeRow } from '../../mfa/second-factors.repository';
import { CHALLENGE_TTL_SECONDS } from '../../mfa/passkeys.service';
import { SecondFactorsService } from '../../mfa/second-factors.service';

export const LOGIN_CSRF_COOKIE = 'login_csrf';
/** Names a sign-in whose password matched and that waits for its second factor (see SecondFactorsService). */
export const LOGIN_CHALLENGE_COOKIE = 'login_challenge';
/** Binds a WebAuthn challenge to the browser it was handed to (see PasskeysService). */
export const WEBAUTHN_CHALLENGE_COOKIE = 'webauthn_challenge';
export const PASSKEY_REFUSED = 'That passkey could not be used to sign in. Try again, or use your password.';
export const GENERIC_FAILURE = 'The email or password is not correct.';
export const WRONG_CODE = 'The code is not correct, or it was used already.';
export const LOCKED = {
  'for-now': 'Too many wrong codes: codes from your app are refused for 15 minutes. A recovery code still works.',
  'for-good':
    'Too many wrong codes: codes from your app are refused until you sign in with a recovery code. Without one, ask an administrator to reset your second factors.',
};

/**
 * What the sign-in steps share: the CSRF token of the sign-in forms (double submit), the sign-in that waits for its
 * second factor (its cookie), and the session a finished sign-in starts. Each step is a controller of its own.
 */
@Injectable()
export class SignInSteps {
  constructor(
    private readonly sessions: SessionsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
    private readonly oauthConfig: OAuthConfig,
  ) {}

  /** A sign-in whose password matched (or a session stepping up) waiting for a second factor: its cookie (five minutes). */
  async startChallenge(res: Response, userId: string, returnTo: string, priorAmr: string | null = null): Promise<string> {
    const challenge = await this.secondFactors.startChallenge(userId, returnTo, priorAmr);
    setCookie(res, LOGIN_CHALLENGE_COOKIE, challenge, 300);
    return challenge;
  }

  /**
   * A second-step form (`/login/code`, `/login/enrol`): its CSRF token checked, the sign-in its cookie names (one
   * try counted) and the code typed; else answered (403, or 401 back to the password) and undefined.
   */
  async waitingSignIn(
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
  async endChallenge(res: Response, secret: string): Promise<void> {
    await this.secondFactors.endChallenge(secret);
    clearCookie(res, LOGIN_CHALLENGE_COOKIE);
  }

  /** No sign-in waiting for its second factor (expired, out of tries, never started): back to the password. */
  signInExpired(res: Response): void {
    clearCookie(res, LOGIN_CHALLENGE_COOKIE);
    const again = { href: '/login', label: 'Sign in again' };
    sendHtml(res, 401, this.pages.error('Sign in again', 'This sign-in has expired or had too many wrong codes.', again));
  }

  /** What an authenticator app shows as the account's issuer. */
  get issuerHost(): string {
    return new URL(this.config.issuer).host;
  }

  /** Starts (or renews) the person's session and sends them on to `returnTo`. */
  async signIn(req: Request, res: Response, userId: string, returnTo: string, amr: AuthenticationMethods): Promise<void> {
    await this.startSession(req, res, userId, amr);
    res.redirect(303, returnTo);
  }

  /** Starts the person's session (a new login of theirs when the browser has one already), setting its cookie. */
  async startSession(req: Request, res: Response, userId: string, amr: AuthenticationMethods): Promise<void> {
    // Signing in again in a session of the same person (prompt=login, max_age) is a new login of that session; as
    // another person (switching accounts), the other person's session ends: its cookie is replaced, and a copy of
    // it must not outlive that.
    const current = await this.sessions.current(sessionCookie.read(req));
    if (current && current.userId !== userId) await this.sessions.end(current, auditContextOf(req), { via: 'account switch' });
    const renewed = current?.userId === userId ? await this.sessions.reauthenticate(current, auditContextOf(req), amr) : undefined;
    const secret = renewed ?? (await this.sessions.start(userId, auditContextOf(req), amr)).secret;
    sessionCookie.write(res, secret, { sessionTtl: this.oauthConfig.sessionTtl });
  }

  /** A sign-in form's fields, when its CSRF token matches the cookie (double submit); else answers 403. */
  checkedForm(req: Request, res: Response): { body: Record<string, unknown>; cookieToken: string } | undefined {
    const form = doubleSubmitted(req);
    if (!form) sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Go back and try again.'));
    return form;
  }

  csrfFor(req: Request, res: Response): string {
    const existing = readCookie(req, LOGIN_CSRF_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
    const token = randomSecret(24);
    setCookie(res, LOGIN_CSRF_COOKIE, token);
    return token;
  }
}

/** A sign-in post's fields (a form, or the page's JSON) when its CSRF token matches the cookie (double submit). */
export function doubleSubmitted(req: Request): { body: Record<string, unknown>; cookieToken: string } | undefined {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const cookieToken = readCookie(req, LOGIN_CSRF_COOKIE);
  return typeof body.csrf === 'string' && cookieToken && safeEqual(body.csrf, cookieToken) ? { body, cookieToken } : undefined;
}

/** The `response` field of a passkey form: the browser's answer as JSON (at most 64 KiB), or undefined. */
export function parsedAnswer(field: unknown): unknown {
  if (typeof field !== 'string' || field.length > 65_536) return undefined;
  try {
    return JSON.parse(field) as unknown;
  } catch {
    return undefined;
  }
}

/** WebAuthn options for the page's script, their challenge bound to this browser by its cookie (five minutes). */
export function sendPasskeyOptions(res: Response, issued: { options: unknown; secret: string }): void {
  setCookie(res, WEBAUTHN_CHALLENGE_COOKIE, issued.secret, CHALLENGE_TTL_SECONDS);
  res.setHeader('Cache-Control', 'no-store');
  res.status(200).json(issued.options);
}
