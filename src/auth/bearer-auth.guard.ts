import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppConfig } from '../config/app-config';
import { asDpopChallenge, bearerChallenge, dpopChallenge } from './bearer-challenge';
import { DPOP_ALGS, DpopProofError, DpopProofs } from './dpop-proofs.service';
import { HttpProblemError } from '../common/http-problem.error';
import { ACR_KEY, AT_ISSUER_KEY, type RequestWithPrincipal } from './auth.decorators';
import { type Acr, meetsAcr } from './acr';
import { AccessTokenVerifier } from './access-token-verifier.service';
import type { BearerOptions } from './bearer.strategy';
import type { AuthPrincipal } from './principal';
import { Callers } from './callers';
import { type RouteTargets, accessDeclarationProblem, declaredAccess } from './route-access.check';

const USER_TOKEN_REQUIRED = 'This route acts for a signed-in user; a client-credentials token cannot call it.';
const ALGS = DPOP_ALGS.join(' ');
/** An Authorization header of the DPoP scheme (RFC 9449 7.1), any case. */
const DPOP_SCHEME = /^[ \t]*dpop(?:[ \t]|$)/i;

/** A route's access declaration, read from its metadata once and kept for every later request. */
interface CheckedRule {
  isPublic: boolean;
  /** Set when the declaration is invalid: the route is denied. */
  problem: string | undefined;
  /** The scopes the token must carry (empty for `scopes: 'any'`). */
  scopes: string[];
  /** The roles a person needs (`undefined`: any person). */
  roles: readonly string[] | undefined;
  /** Whether a client-credentials token (no user) may call it. */
  clientTokens: boolean;
  /** The sign-in level a person's token must carry (`@RequireAcr`). */
  acr: Acr | undefined;
  /** The origin the route is reached at, which a DPoP proof's `htu` names (`@AtIssuer`: the issuer's). */
  origin: string;
}

/**
 * The global guard of the resource server (RFC 6750): every route needs a valid bearer token unless it is marked
 * `@Public()`. `@nestjs/passport`'s `AuthGuard('bearer')` runs passport-http-bearer (BearerStrategy); this guard
 * turns its outcome into the exact challenges of RFC 6750 section 3, then checks the route's scopes and roles. It
 * fails closed: a route without a valid access declaration is denied (and the application does not start with
 * one, see RouteAccessCheck).
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  /** Per controller class, then per handler (a handler inherited by two controllers may be declared apart). */
  private readonly rules = new WeakMap<object, WeakMap<object, CheckedRule>>();

  /** The origins of the API's URLs and of the authorization server's, which a DPoP proof's `htu` names. */
  private readonly origin: string;
  private readonly issuerOrigin: string;

  constructor(
    private readonly reflector: Reflector,
    private readonly verifier: AccessTokenVerifier,
    private readonly callers: Callers,
    private readonly proofs: DpopProofs,
    config: AppConfig,
  ) {
    super();
    this.origin = config.resourceOrigin;
    this.issuerOrigin = new URL(config.issuer).origin;
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = this.ruleOf(context);
    if (rule.isPublic) return true;
    const req = context.switchToHttp().getRequest<Request & Required<RequestWithPrincipal>>();
    const authorization = req.headers.authorization;
    if (authorization === undefined || !DPOP_SCHEME.test(authorization)) return this.authorize(context, rule, req, false);
    try {
      return await this.authorize(context, rule, req, true);
    } catch (error) {
      // RFC 9449 7.1: a request of the DPoP scheme is answered with DPoP challenges.
      if (!(error instanceof HttpProblemError)) throw error;
      const challenge = error.headers['WWW-Authenticate'];
      if (challenge === undefined || !challenge.startsWith('Bearer')) throw error;
      throw new HttpProblemError(error.status, error.code, error.message, {
        ...error.headers,
        'WWW-Authenticate': asDpopChallenge(challenge, ALGS),
      });
    }
  }

  private async authorize(
    context: ExecutionContext,
    rule: CheckedRule,
    req: Request & Required<RequestWithPrincipal>,
    dpop: boolean,
  ): Promise<boolean> {
    await super.canActivate(context);
    // AuthGuard stored the caller under `property` (getAuthenticateOptions).
    const principal = req.principal;
    if (dpop || principal.jkt !== undefined) await this.checkProof(req, principal, dpop, rule.origin);
    if (rule.problem) throw new HttpProblemError(403, 'forbidden', 'This route declares no access rule, so it is closed.');
    // A client's own token on a route that acts for a person first: no scope would let it in, so it is not told
    // to ask for one (insufficient_scope would send it round for the same scopes again); its token is of the wrong
    // kind for this route, which the challenge says.
    if (principal.kind === 'client' && !rule.clientTokens) {
      throw new HttpProblemError(403, 'user-token-required', USER_TOKEN_REQUIRED, {
        'WWW-Authenticate': bearerChallenge({ error: 'invalid_token', error_description: USER_TOKEN_REQUIRED }),
      });
    }
    if (rule.scopes.some((scope) => !principal.scopes.has(scope))) {
      // Every scope the route needs, not only the missing ones (RFC 6750 3.1): a client stepping up asks for these
      // together with what it already holds (the MCP authorization spec's scope challenge handling).
      const needed = rule.scopes.join(' ');
      throw new HttpProblemError(403, 'insufficient-scope', `This request needs the scope ${needed}.`, {
        'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', scope: needed }),
      });
    }
    if (principal.kind === 'client') return true;
    if (rule.roles) await this.checkRole(principal, rule.roles);
    if (rule.acr && !meetsAcr(principal.acr, rule.acr)) {
      // RFC 9470 3: the client asks for this level with acr_values, and the person signs in again (step-up).
      const detail = `This request needs a sign-in of level ${rule.acr}; the token is of a sign-in of level ${principal.acr ?? 'unknown'}.`;
      throw new HttpProblemError(401, 'insufficient-user-authentication', detail, {
        'WWW-Authenticate': bearerChallenge({ error: 'insufficient_user_authentication', error_description: detail, acr_values: rule.acr }),
      });
    }
    return true;
  }

  private ruleOf(context: ExecutionContext): CheckedRule {
    const handler = context.getHandler();
    const controller = context.getClass();
    let rules = this.rules.get(controller);
    if (!rules) this.rules.set(controller, (rules = new WeakMap()));
    let rule = rules.get(handler);
    if (!rule) {
      const targets = [handler, controller] as RouteTargets;
      const declared = declaredAccess(this.reflector, targets);
      const problem = accessDeclarationProblem(this.reflector, targets);
      const access = problem ? undefined : declared.rule;
      rule = {
        isPublic: !problem && declared.isPublic,
        problem,
        scopes: access && access.scopes !== 'any' ? [...access.scopes] : [],
        roles: access && access.people !== 'any' ? access.people : undefined,
        clientTokens: access?.clientTokens === true,
        acr: this.reflector.getAllAndOverride<Acr | undefined>(ACR_KEY, targets),
        origin: this.reflector.getAllAndOverride<boolean | undefined>(AT_ISSUER_KEY, targets) ? this.issuerOrigin : this.origin,
      };
      rules.set(handler, rule);
    }
    return rule;
  }

  /**
   * Passport's options for this application's attempt. Passport keeps one strategy per name for the whole process,
   * so with several applications in one process (tests, a fleet in one runner) the `bearer` strategy registered
   * last would verify every application's tokens; handing over this application's verifier keeps each on its own.
   */
  override getAuthenticateOptions(): { session: false; property: 'principal' } & BearerOptions {
    return { session: false, property: 'principal', verifier: this.verifier };
  }

  /** Passport's outcome: the caller, or the RFC 6750 answer to a failed attempt. */
  override handleRequest<TUser = AuthPrincipal>(
    error: unknown,
    user: AuthPrincipal | false,
    challenge: unknown,
    context: ExecutionContext,
    status?: unknown,
  ): TUser {
    if (error) throw error;
    if (!user) {
      // Without a token, the challenge names the scope the route needs (RFC 6750 3), so that a client (an MCP
      // agent) asks for that first.
      const scope = this.ruleOf(context).scopes.join(' ') || undefined;
      throw failure(challenge, typeof status === 'number' ? status : undefined, scope);
    }
    return user as TUser;
  }

  /**
   * RFC 9449 7: a token bound to a key comes with the DPoP scheme and a proof of that key for this request and this
   * token; a token of the DPoP scheme must be bound. A stolen bound token is of no use without the private key.
   */
  private async checkProof(req: Request, principal: AuthPrincipal, dpop: boolean, origin: string): Promise<void> {
    if (!dpop) {
      const detail = 'This access token is bound to a key: send it with the DPoP scheme and a DPoP proof.';
      throw new HttpProblemError(401, 'invalid-token', detail, {
        'WWW-Authenticate': dpopChallenge({ error: 'invalid_token', error_description: detail, algs: ALGS }),
      });
    }
    if (principal.jkt === undefined) throw invalidToken('This access token is not bound to a key: send it with the Bearer scheme.');
    const token = req.headers.authorization!.trim().split(/[ \t]+/)[1]!;
    let jkt: string;
    try {
      jkt = await this.proofs.check(req.headers.dpop, { htm: req.method, htu: `${origin}${req.path}`, accessToken: token });
    } catch (error) {
      if (!(error instanceof DpopProofError)) throw error;
      throw invalidProof(error.description);
    }
    if (jkt !== principal.jkt) throw invalidProof('The DPoP proof is signed by another key than the one the access token is bound to.');
  }

  private async checkRole(principal: AuthPrincipal, roles: readonly string[]): Promise<void> {
    const role = await this.callers.roleOf(principal.sub);
    // The token verified, but its user is gone: to the client that is an invalid token (RFC 6750 3.1).
    if (role === undefined) throw invalidToken('The user of this access token no longer exists.');
    if (!roles.includes(role)) {
      const detail =
        roles.length === 1 && roles[0] === 'admin'
          ? 'This route is for administrators only.'
          : `This route needs the role ${roles.join(' or ')}.`;
      throw new HttpProblemError(403, 'role-required', detail);
    }
  }
}

/** The RFC 6750 answer to a failed attempt: 400 for a malformed request, else a 401 with its challenge. */
function failure(challenge: unknown, status: number | undefined, scope: string | undefined): HttpProblemError {
  if (status === 400) {
    return new HttpProblemError(400, 'invalid-request', 'The Authorization header is malformed, or the token was sent more than one way.', {
      'WWW-Authenticate': bearerChallenge({ error: 'invalid_request' }),
    });
  }
  if (typeof challenge === 'string' && challenge.includes('error="invalid_token"')) {
    return invalidToken('The access token is invalid, expired or revoked.');
  }
  return new HttpProblemError(401, 'unauthorized', 'An access token is required.', {
    'WWW-Authenticate': bearerChallenge({ realm: 'api', scope }),
  });
}

function invalidProof(detail: string): HttpProblemError {
  return new HttpProblemError(401, 'invalid-dpop-proof', detail, {
    'WWW-Authenticate': dpopChallenge({ error: 'invalid_dpop_proof', error_description: detail, algs: ALGS }),
  });
}

function invalidToken(detail: string): HttpProblemError {
  return new HttpProblemError(401, 'invalid-token', detail, { 'WWW-Authenticate': bearerChallenge({ error: 'invalid_token' }) });
}
