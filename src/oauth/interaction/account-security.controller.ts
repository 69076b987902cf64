import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { auditContextOf } from '../../audit/audit-events';
import { Public } from '../../auth/auth.decorators';
import { safeEqual } from '../../common/crypto/secrets';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { RateLimit } from '../../common/rate-limit/rate-limit';
import { NoQueryParams } from '../../common/validation';
import { AppConfig } from '../../config/app-config';
import { SecondFactorsService } from '../../mfa/second-factors.service';
import { PASSKEY_NAME_MAX, PasskeysService } from '../../mfa/passkeys.service';
import { ApiBody, ApiOkResponse } from '@nestjs/swagger';
import { problem, sendProblem } from '../../common/problem';
import { CONTROL_CHARACTER } from '../../common/text';
import { clearCookie, readCookie, sessionCookie } from './cookies';
import { WEBAUTHN_CHALLENGE_COOKIE, sendPasskeyOptions } from './sign-in-steps';
import { UsersService } from '../../users/users.service';
import { type AccountSecurityPageView, OAuthPages, sendHtml, sendRedirect } from './pages';
import { type CurrentSession, SessionsService } from './sessions.service';
import { ACCOUNT_SECURITY_PATH, FactorChangeRules } from './factor-change-rules';

const BACK = { href: ACCOUNT_SECURITY_PATH, label: 'Back to sign-in security' };
const AUTHENTICATOR_ACTIVE = 'An authenticator is set up already: remove it first to set up another.';

/**
 * The account's sign-in security page: a signed-in person sets up an authenticator app (TOTP), confirms it with a
 * first code and receives their recovery codes once, or removes it with a current code; and adds, renames and
 * removes passkeys. A person whose role needs a second factor keeps at least one. Public to the bearer
 * guard: the login session cookie is its authentication and the session's CSRF token guards its forms.
 */
@Public()
@Controller('account/security')
export class AccountSecurityController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly users: UsersService,
    private readonly pages: OAuthPages,
    private readonly config: AppConfig,
    private readonly rules: FactorChangeRules,
  ) {}

  @Get()
  @ApiHtml(200, "The state of the person's authenticator, with the form to set one up or to remove it")
  @ApiRedirect(302, `No login session: to /login?return_to=${ACCOUNT_SECURITY_PATH}`)
  @ApiProblems(400)
  async show(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.sessions.current(sessionCookie.read(req));
    if (!session) {
      sendRedirect(res, 302, `/login?return_to=${encodeURIComponent(ACCOUNT_SECURITY_PATH)}`);
      return;
    }
    await this.render(res, 200, session);
  }

  @Post('totp')
  @ApiPageForm({ csrf: { type: 'string' } }, ['csrf'])
  @ApiHtml(200, 'A new authenticator to scan (QR code and key), with the form for its first code')
  @ApiHtml(
    403,
    'No login session, a CSRF token that does not match it, a password-only session of a person with a factor, or (the ' +
      'first factor) a sign-in more than 5 minutes old: the page links to the password again',
  )
  @ApiHtml(409, 'An authenticator is set up already')
  @ApiPageFormErrors('A query parameter')
  async begin(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    if ((await this.secondFactors.status(session.userId)).totp === 'active') {
      await this.render(res, 409, session, { error: AUTHENTICATOR_ACTIVE });
      return;
    }
    if (await this.confirmFirst(res, session, 'add')) return;
    const label = (await this.users.emailOf(session.userId)) ?? session.userId;
    const enrolment = await this.secondFactors.beginTotp(session.userId, label, new URL(this.config.issuer).host);
    if (!enrolment) {
      await this.render(res, 409, session, { error: AUTHENTICATOR_ACTIVE });
      return;
    }
    await this.render(res, 200, session, { enrolment: { qrSvg: enrolment.qrSvg, secret: enrolment.secret } });
  }

  @Post('totp/confirm')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiHtml(200, 'Confirmed: the recovery codes, shown this once')
  @ApiPageFormErrors('A code that does not match (or no authenticator being set up): the page again')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiProblems(429)
  @RateLimit('login')
  async confirm(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const codes = await this.secondFactors.confirmTotp(session.userId, codeOf(req), auditContextOf(req));
    if (!codes) {
      await this.render(res, 400, session, {
        error: 'The code does not match. Set up the authenticator again and enter its current code.',
      });
      return;
    }
    await this.render(res, 200, session, { recoveryCodes: codes });
  }

  @Post('totp/remove')
  @ApiPageForm({ code: { type: 'string', maxLength: 32 }, csrf: { type: 'string' } }, ['code', 'csrf'])
  @ApiRedirect(303, `Removed: back to ${ACCOUNT_SECURITY_PATH}`)
  @ApiPageFormErrors('A wrong or used code: the page again')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiHtml(409, "The person's role needs a second factor (MFA_REQUIRED_ROLES): it stays")
  @ApiProblems(429)
  @RateLimit('login')
  async remove(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const keepOne = await this.policyNeedsFactor(session.userId);
    const lastFactor = () =>
      this.render(res, 409, session, { error: 'Your account needs a second factor: add a passkey before you remove the authenticator.' });
    if (keepOne && !(await this.passkeys.has(session.userId))) {
      await lastFactor();
      return;
    }
    // A current code (or a recovery code), so that a session left open on a shared computer cannot remove it.
    const check = await this.secondFactors.verify(session.userId, codeOf(req), auditContextOf(req));
    if (!check.ok) {
      const error = check.locked
        ? 'Too many wrong codes: codes are refused for 15 minutes. Try again later.'
        : 'The code is not correct, or it was used already.';
      await this.render(res, 400, session, { error });
      return;
    }
    // Checked again as it goes: a passkey removed meanwhile (another tab) may have made it the last factor.
    if ((await this.secondFactors.removeOwn(session.userId, auditContextOf(req), keepOne)) === 'last') {
      await lastFactor();
      return;
    }
    await this.rules.removed(session, auditContextOf(req));
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }

  @Post('passkeys/options')
  @ApiBody({ schema: { type: 'object', required: ['csrf'], properties: { csrf: { type: 'string' } } } })
  @ApiOkResponse({
    description:
      'WebAuthn creation options (PublicKeyCredentialCreationOptionsJSON) for navigator.credentials.create: a discoverable ' +
      "credential, user verification required, the person's passkeys excluded; the webauthn_challenge cookie binds the challenge to this browser",
  })
  @ApiProblems(400, 403)
  async passkeyOptions(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.postedBySession(req);
    if (!session) {
      sendProblem(res, problem(403, 'No login session, or the form has expired: load the page again.', req.path));
      return;
    }
    const refused = await this.rules.refusal(session, 'add');
    if (refused) {
      sendProblem(res, problem(403, refused.error, req.path));
      return;
    }
    const label = (await this.users.emailOf(session.userId)) ?? session.userId;
    sendPasskeyOptions(res, await this.passkeys.registrationOptions(session.userId, label));
  }

  @Post('passkeys')
  @ApiPageForm(
    {
      response: { type: 'string', description: "the browser's answer (a PublicKeyCredential as JSON)" },
      name: { type: 'string', maxLength: PASSKEY_NAME_MAX },
      csrf: { type: 'string' },
    },
    ['response', 'csrf'],
  )
  @ApiRedirect(303, `Added: back to ${ACCOUNT_SECURITY_PATH}`)
  @ApiPageFormErrors('An answer that does not verify (wrong origin or relying party, no user verification, replayed), or a bad name')
  @ApiHtml(403, 'No login session, a CSRF token that does not match it, or a session that may not add a factor (see /passkeys/options)')
  @ApiHtml(409, 'This passkey is registered already')
  async addPasskey(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    if (await this.confirmFirst(res, session, 'add')) return;
    const webauthnSecret = readCookie(req, WEBAUTHN_CHALLENGE_COOKIE);
    clearCookie(res, WEBAUTHN_CHALLENGE_COOKIE);
    const name = nameOf(req);
    if (name === undefined) {
      await this.render(res, 400, session, {
        error: `The name must be at most ${PASSKEY_NAME_MAX} characters, without control characters.`,
      });
      return;
    }
    const answer = fieldOf(req, 'response', 65_536);
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer);
    } catch {
      parsed = undefined;
    }
    const added = await this.passkeys.register(session.userId, webauthnSecret, parsed, name, auditContextOf(req));
    if (!added.ok) {
      const status = added.reason === 'already registered' ? 409 : 400;
      const error =
        added.reason === 'already registered' ? 'This passkey is registered already.' : 'The passkey could not be added. Try again.';
      await this.render(res, status, session, { error });
      return;
    }
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }

  @Post('passkeys/rename')
  @ApiPageForm({ id: { type: 'string' }, name: { type: 'string', maxLength: PASSKEY_NAME_MAX }, csrf: { type: 'string' } }, [
    'id',
    'name',
    'csrf',
  ])
  @ApiRedirect(303, `Renamed: back to ${ACCOUNT_SECURITY_PATH}`)
  @ApiPageFormErrors('An empty or bad name')
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiHtml(404, 'No passkey of the person has that id')
  async renamePasskey(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    const name = nameOf(req);
    if (!name) {
      await this.render(res, 400, session, { error: `A name has 1 to ${PASSKEY_NAME_MAX} characters, without control characters.` });
      return;
    }
    if (!(await this.passkeys.rename(session.userId, fieldOf(req, 'id', 1400), name))) {
      await this.render(res, 404, session, { error: 'That passkey is not one of yours.' });
      return;
    }
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }

  @Post('passkeys/remove')
  @ApiPageForm({ id: { type: 'string' }, csrf: { type: 'string' } }, ['id', 'csrf'])
  @ApiRedirect(303, `Removed: back to ${ACCOUNT_SECURITY_PATH}`)
  @ApiHtml(403, 'No login session, or a CSRF token that does not match it')
  @ApiHtml(404, 'No passkey of the person has that id')
  @ApiHtml(409, "The person's role needs a second factor (MFA_REQUIRED_ROLES) and this is their last one")
  @ApiPageFormErrors('A query parameter')
  async removePasskey(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.checkedSession(req, res);
    if (!session) return;
    if (await this.confirmFirst(res, session, 'remove')) return;
    const userId = session.userId;
    // The last factor is checked as the passkey goes, under a lock that a removal of the authenticator takes too.
    const outcome = await this.passkeys.remove(
      userId,
      fieldOf(req, 'id', 1400),
      `user:${userId}`,
      auditContextOf(req),
      await this.policyNeedsFactor(userId),
    );
    if (outcome === 'last') {
      await this.render(res, 409, session, { error: 'Your account needs a second factor: this passkey is your last one and stays.' });
      return;
    }
    if (outcome === 'unknown') {
      await this.render(res, 404, session, { error: 'That passkey is not one of yours.' });
      return;
    }
    await this.rules.removed(session, auditContextOf(req));
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }

  /** When the session may not make this change (see FactorChangeRules): answers 403 with the way on, and returns true. */
  private async confirmFirst(res: Response, session: CurrentSession, change: 'add' | 'remove'): Promise<boolean> {
    const refused = await this.rules.refusal(session, change);
    if (refused) await this.render(res, 403, session, refused);
    return refused !== undefined;
  }

  /** Whether the person's role needs a second factor (MFA_REQUIRED_ROLES). */
  private async policyNeedsFactor(userId: string): Promise<boolean> {
    const role = await this.users.roleOf(userId);
    return role !== undefined && this.secondFactors.requiredFor(role);
  }

  /** The session of a form post whose CSRF token matches it; else answers 403 and returns undefined. */
  private async checkedSession(req: Request, res: Response): Promise<CurrentSession | undefined> {
    const session = await this.postedBySession(req);
    if (!session) sendHtml(res, 403, this.pages.error('Request refused', 'The form has expired. Sign in and try again.', BACK));
    return session;
  }

  /** The login session of a post (a form, or the page's JSON) whose CSRF token is that session's; else undefined. */
  private async postedBySession(req: Request): Promise<CurrentSession | undefined> {
    const csrf = ((req.body ?? {}) as Record<string, unknown>).csrf;
    const session = await this.sessions.current(sessionCookie.read(req));
    return session && typeof csrf === 'string' && safeEqual(csrf, session.csrfToken) ? session : undefined;
  }

  private async render(
    res: Response,
    status: number,
    session: CurrentSession,
    extra: Partial<AccountSecurityPageView> = {},
  ): Promise<void> {
    const [state, passkeys] = await Promise.all([this.secondFactors.status(session.userId), this.passkeys.list(session.userId)]);
    const confirmFirst = await this.rules.confirmFirst(session, state.totp === 'active' || passkeys.length > 0);
    const view = { csrf: session.csrfToken, ...state, passkeys, ...(confirmFirst ? { confirmFirst } : {}), ...extra };
    sendHtml(res, status, this.pages.accountSecurity(view));
  }
}

function codeOf(req: Request): string {
  return fieldOf(req, 'code', 32);
}

/** A form field as text, cut at `max` characters; empty when absent. */
function fieldOf(req: Request, name: string, max: number): string {
  const value = ((req.body ?? {}) as Record<string, unknown>)[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}

/** A passkey's name as typed (trimmed; empty when none), or undefined when too long or with control characters. */
function nameOf(req: Request): string | undefined {
  const value = ((req.body ?? {}) as Record<string, unknown>).name;
  const name = typeof value === 'string' ? value.trim() : '';
  return name.length > PASSKEY_NAME_MAX || CONTROL_CHARACTER.test(name) ? undefined : name;
}
