import { Controller, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { auditContextOf } from '../../audit/audit-events';
import { Public } from '../../auth/auth.decorators';
import { ApiHtml, ApiPageForm, ApiPageFormErrors, ApiProblems, ApiRedirect } from '../../common/openapi';
import { NoQueryParams } from '../../common/validation';
import { PASSKEY_NAME_MAX, PasskeysService } from '../../mfa/passkeys.service';
import { ApiBody, ApiOkResponse } from '@nestjs/swagger';
import { problem, sendProblem } from '../../common/problem';
import { clearCookie, readCookie } from './cookies';
import { WEBAUTHN_CHALLENGE_COOKIE, sendPasskeyOptions } from './sign-in-steps';
import { UsersService } from '../../users/users.service';
import { sendRedirect } from './pages';
import { AccountSecurityPage, fieldOf, nameOf } from './account-security-page';
import { ACCOUNT_SECURITY_PATH, FactorChangeRules } from './factor-change-rules';

/**
 * The passkeys of the sign-in security page: a signed-in person adds, renames and removes them (a person whose role
 * needs a second factor keeps at least one). Public to the bearer guard, as the page is: the login session cookie
 * is its authentication and the session's CSRF token guards its forms.
 */
@Public()
@Controller('account/security')
export class AccountPasskeysController {
  constructor(
    private readonly passkeys: PasskeysService,
    private readonly users: UsersService,
    private readonly rules: FactorChangeRules,
    private readonly page: AccountSecurityPage,
  ) {}

  @Post('passkeys/options')
  @ApiBody({ schema: { type: 'object', required: ['csrf'], properties: { csrf: { type: 'string' } } } })
  @ApiOkResponse({
    description:
      'WebAuthn creation options (PublicKeyCredentialCreationOptionsJSON) for navigator.credentials.create: a discoverable ' +
      "credential, user verification required, the person's passkeys excluded; the webauthn_challenge cookie binds the challenge to this browser",
  })
  @ApiProblems(400, 403)
  async passkeyOptions(@Req() req: Request, @Res() res: Response, @NoQueryParams() _query: unknown): Promise<void> {
    const session = await this.page.postedBySession(req);
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
    const session = await this.page.checkedSession(req, res);
    if (!session) return;
    if (await this.page.confirmFirst(res, session, 'add')) return;
    const webauthnSecret = readCookie(req, WEBAUTHN_CHALLENGE_COOKIE);
    clearCookie(res, WEBAUTHN_CHALLENGE_COOKIE);
    const name = nameOf(req);
    if (name === undefined) {
      await this.page.render(res, 400, session, {
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
      await this.page.render(res, status, session, { error });
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
    const session = await this.page.checkedSession(req, res);
    if (!session) return;
    const name = nameOf(req);
    if (!name) {
      await this.page.render(res, 400, session, { error: `A name has 1 to ${PASSKEY_NAME_MAX} characters, without control characters.` });
      return;
    }
    if (!(await this.passkeys.rename(session.userId, fieldOf(req, 'id', 1400), name))) {
      await this.page.render(res, 404, session, { error: 'That passkey is not one of yours.' });
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
    const session = await this.page.checkedSession(req, res);
    if (!session) return;
    if (await this.page.confirmFirst(res, session, 'remove')) return;
    const userId = session.userId;
    // The last factor is checked as the passkey goes, under a lock that a removal of the authenticator takes too.
    const outcome = await this.passkeys.remove(
      userId,
      fieldOf(req, 'id', 1400),
      `user:${userId}`,
      auditContextOf(req),
      await this.page.policyNeedsFactor(userId),
    );
    if (outcome === 'last') {
      await this.page.render(res, 409, session, { error: 'Your account needs a second factor: this passkey is your last one and stays.' });
      return;
    }
    if (outcome === 'unknown') {
      await this.page.render(res, 404, session, { error: 'That passkey is not one of yours.' });
      return;
    }
    await this.rules.removed(session, auditContextOf(req));
    sendRedirect(res, 303, ACCOUNT_SECURITY_PATH);
  }
}
