import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiParam, ApiQuery } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { auditContextOf } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { Public } from '../auth/auth.decorators';
import { ApiHtml, ApiProblems, ApiRedirect } from '../common/openapi';
import { isUuid } from '../common/validation';
import { RateLimit } from '../rate-limit/rate-limit';
import { OAuthPages, SignInSteps, clearCookie, readCookie, safeReturnTo, sendHtml, setCookie } from '../oauth';
import { SecondFactorsService } from '../mfa/second-factors.service';
import { PasskeysService } from '../mfa/passkeys.service';
import { UsersService } from '../users/users.service';
import type { AuthenticationMethods } from '../mfa/authentication-methods';
import { ConnectionsService } from './connections.service';
import { FederatedPeople, FederatedRefusal } from './federated-people';
import { CALLBACK_PATH, OidcUpstream, UpstreamSignInError } from './oidc-upstream';

/** The cookie that binds a sign-in sent upstream to this browser (its `state`), for ten minutes. */
const STATE_COOKIE = 'connection_state';

/** Signing in through a connection: off to the upstream provider, and back (RFC 6749 4.1 as its client). */
@Public()
@Controller()
export class ConnectionLoginController {
  constructor(
    private readonly connections: ConnectionsService,
    private readonly upstream: OidcUpstream,
    private readonly people: FederatedPeople,
    private readonly steps: SignInSteps,
    private readonly pages: OAuthPages,
    private readonly audit: AuditService,
    private readonly users: UsersService,
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
  ) {}

  // Before the start route: Express would take `callback` for a connection id.
  @Get(CALLBACK_PATH.slice(1))
  @ApiRedirect(303, 'Signed in: the session cookie is set, to where the sign-in started')
  @ApiHtml(400, 'A sign-in that expired, came back to another browser, or whose answer was refused')
  @ApiHtml(403, 'The person cannot sign in this way (see the page)')
  @ApiProblems(429)
  @RateLimit('login')
  async callback(@Req() req: Request, @Res() res: Response): Promise<void> {
    const state = typeof req.query.state === 'string' ? req.query.state : '';
    const cookie = readCookie(req, STATE_COOKIE);
    clearCookie(res, STATE_COOKIE);
    // The answer must come back to the browser that left (else someone could sign a victim in as themselves).
    if (!state || cookie !== state)
      return this.refused(res, 400, 'This sign-in did not start in this browser, or it expired. Start again.');
    try {
      const current = new URL(req.originalUrl, this.upstream.redirectUri);
      const { connection, claims, returnTo } = await this.upstream.finish(current, state);
      const userId = await this.people.personFor(connection, claims, auditContextOf(req));
      const upstreamMfa = Array.isArray(claims.amr) && claims.amr.includes('mfa');
      const amr: AuthenticationMethods = connection.trustUpstreamMfa && upstreamMfa ? ['fed', 'mfa'] : ['fed'];
      if (!amr.includes('mfa') && (await this.needsSecondFactor(userId))) {
        return this.refused(
          res,
          403,
          'Your account needs a second factor here, which a company sign-in cannot ask for yet. Sign in with a passkey.',
        );
      }
      await this.steps.signIn(req, res, userId, returnTo, amr);
    } catch (error) {
      if (error instanceof UpstreamSignInError) {
        const details = { reason: 'connection answer refused', error: (error.reason ?? error.message).slice(0, 300) };
        await this.audit.record({ type: 'login.failed', actor: 'anonymous', details }, auditContextOf(req));
        return this.refused(res, 400, error.message);
      }
      if (error instanceof FederatedRefusal) return this.refused(res, 403, error.message);
      throw error;
    }
  }

  @Get('login/connections/:connectionId')
  @ApiParam({ name: 'connectionId', schema: { type: 'string', format: 'uuid' } })
  @ApiQuery({ name: 'return_to', required: false, schema: { type: 'string' }, description: 'a relative path on this server' })
  @ApiRedirect(303, "To the connection's identity provider")
  @ApiHtml(404, 'No such connection')
  @ApiHtml(502, 'The identity provider could not be reached')
  @ApiProblems(429)
  @RateLimit('login')
  async start(@Param('connectionId') id: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const connection = isUuid(id) ? await this.connections.find(id) : undefined;
    if (!connection) return sendHtml(res, 404, this.pages.error('Unknown connection', 'There is no such way to sign in here.', BACK));
    try {
      const { url, state } = await this.upstream.start(connection, safeReturnTo(req.query.return_to));
      setCookie(res, STATE_COOKIE, state, 600);
      res.redirect(303, url.href);
    } catch (error) {
      if (!(error instanceof UpstreamSignInError)) throw error;
      sendHtml(res, 502, this.pages.error('Sign-in unavailable', `${connection.name} cannot be reached now. Try again later.`, BACK));
    }
  }

  /** A second factor this service asks of the person (theirs, or their role's): a connection's sign-in alone is not enough. */
  private async needsSecondFactor(userId: string): Promise<boolean> {
    const [totp, passkey, role] = await Promise.all([
      this.secondFactors.required(userId),
      this.passkeys.has(userId),
      this.users.roleOf(userId),
    ]);
    return totp || passkey || (role !== undefined && this.secondFactors.requiredFor(role));
  }

  private refused(res: Response, status: number, message: string): void {
    sendHtml(res, status, this.pages.error('Sign-in refused', message, BACK));
  }
}

const BACK = { href: '/login', label: 'Back to sign-in' };
