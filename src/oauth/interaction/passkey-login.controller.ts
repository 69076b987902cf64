import { auditContextOf } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { Controller, Post, Req, Res } from '@nestjs/common';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { NoQueryParams } from '../../common/validation';
import type { Request, Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { RateLimit } from '../../rate-limit/rate-limit';
import { AppConfig } from '../../config/app-config';
import { MetricsService } from '../../metrics/metrics.service';
import { clearCookie, readCookie, sessionCookie } from './cookies';
import { OAuthPages, sendHtml } from './pages';
import { safeReturnTo } from './return-to';
import { SessionsService } from './sessions.service';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { combinedAmr } from '../../mfa/authentication-methods';
import { type PasskeySignIn, PasskeysService } from '../../mfa/passkeys.service';
import { ApiBody, ApiOkResponse } from '@nestjs/swagger';
import { problem, sendProblem } from '../../common/problem';

import {
  SignInSteps,
  LOGIN_CHALLENGE_COOKIE,
  WEBAUTHN_CHALLENGE_COOKIE,
  sendPasskeyOptions,
  PASSKEY_REFUSED,
  doubleSubmitted,
  parsedAnswer,
} from './sign-in-steps';

/** Signing in with a passkey: alone (discoverable), as the second step after a password, or to confirm a sign-in again. */
@Public()
@Controller()
export class PasskeyLoginController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly steps: SignInSteps,
  ) {}

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
    sendPasskeyOptions(res, await this.passkeys.authenticationOptions(userId));
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
    const form = this.steps.checkedForm(req, res);
    if (!form) return;
    const { body, cookieToken } = form;
    const answer = parsedAnswer(body.response);
    const webauthnSecret = readCookie(req, WEBAUTHN_CHALLENGE_COOKIE);
    clearCookie(res, WEBAUTHN_CHALLENGE_COOKIE);
    if (body.step === 'second-factor') {
      const waiting = await this.steps.waitingSignIn(req, res, form);
      if (!waiting) return;
      const { challenge } = waiting;
      const result = await this.passkeys.authenticate(webauthnSecret, answer, 'second-factor', challenge.userId);
      if (!result.ok) {
        await this.passkeyRefused(req, result);
        const totp = await this.secondFactors.required(challenge.userId);
        sendHtml(res, 401, this.pages.secondFactor({ csrf: cookieToken, totp, passkey: true, error: PASSKEY_REFUSED }));
        return;
      }
      await this.steps.endChallenge(res, waiting.secret);
      await this.steps.signIn(req, res, result.userId, challenge.returnTo, combinedAmr(challenge.priorAmr, result.amr));
      return;
    }
    const returnTo = safeReturnTo(body.return_to);
    if (body.step === 'reauth') {
      // A signed-in person confirming it is them (max_age): one of their own passkeys, a whole sign-in on its own.
      const session = await this.sessions.current(sessionCookie.read(req));
      if (!session) {
        this.steps.signInExpired(res);
        return;
      }
      const result = await this.passkeys.authenticate(webauthnSecret, answer, 'second-factor', session.userId);
      if (!result.ok) {
        await this.passkeyRefused(req, result);
        const view = { csrf: cookieToken, totp: false, passkey: true, reauthenticate: { returnTo }, error: PASSKEY_REFUSED };
        sendHtml(res, 401, this.pages.secondFactor(view));
        return;
      }
      await this.steps.signIn(
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
    await this.steps.signIn(req, res, result.userId, returnTo, result.amr);
  }

  /** A refused passkey: audited with why (the person it names, when one), counted as a failed sign-in. */
  private async passkeyRefused(req: Request, result: Extract<PasskeySignIn, { ok: false }>): Promise<void> {
    const details = { reason: `passkey: ${result.reason}` };
    await this.audit.record({ type: 'login.failed', actor: 'anonymous', userId: result.userId ?? null, details }, auditContextOf(req));
    this.metrics.loginFailed();
  }
}
