import { type ExecutionContext, Injectable } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import passport from 'passport';
import { HttpProblemError } from '../common/http-problem.error';
import { ANY_SCOPE_KEY, IS_PUBLIC_KEY, ROLES_KEY, type RequestWithPrincipal, SCOPES_KEY } from './auth.decorators';
import { BearerStrategy } from './bearer.strategy';
import type { AuthPrincipal } from './principal';
import { RoleDirectory } from './role-directory';
import { type RouteTargets, accessDeclarationProblem } from './route-access.check';

/** What passport sees of a request (it adds its own properties to it, so it gets this, not the request). */
interface PassportView {
  headers: { authorization?: string };
  query: unknown;
  body: unknown;
  principal?: AuthPrincipal;
  authInfo?: unknown;
}

/** A route's access declaration, read from its metadata once and kept for every later request. */
interface AccessRule {
  isPublic: boolean;
  /** Set when the declaration is invalid: the route is denied. */
  problem: string | undefined;
  /** The scopes the token must carry (empty for `@AnyScope()`). */
  scopes: string[];
  roles: string[] | undefined;
}

/**
 * The global guard of the resource server (RFC 6750): every route needs a valid bearer token unless it is marked
 * `@Public()`. Passport's `bearer` strategy authenticates; this guard turns its outcome into the exact challenges
 * of RFC 6750 section 3, then checks the route's scopes and roles. It fails closed: a route without a valid
 * access declaration is denied (and the application does not start with one, see RouteAccessCheck).
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  private roles: RoleDirectory | undefined;
  /** Per controller class, then per handler (a handler inherited by two controllers may be declared apart). */
  private readonly rules = new WeakMap<object, WeakMap<object, AccessRule>>();
  private readonly views = new WeakMap<ExecutionContext, PassportView>();

  constructor(
    private readonly reflector: Reflector,
    private readonly strategy: BearerStrategy,
    private readonly moduleRef: ModuleRef,
  ) {
    super({ session: false, property: 'principal' });
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = this.ruleOf(context);
    if (rule.isPublic) return true;
    await super.canActivate(context);
    const principal = this.views.get(context)!.principal!;
    context.switchToHttp().getRequest<RequestWithPrincipal>().principal = principal;

    if (rule.problem) throw new HttpProblemError(403, 'forbidden', 'This route declares no access rule, so it is closed.');
    if (rule.scopes.some((scope) => !principal.scopes.has(scope))) {
      const needed = rule.scopes.join(' ');
      throw new HttpProblemError(403, 'insufficient-scope', `This request needs the scope ${needed}.`, {
        'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${needed}"`,
      });
    }
    if (rule.roles) await this.checkRole(principal, rule.roles);
    return true;
  }

  private ruleOf(context: ExecutionContext): AccessRule {
    const handler = context.getHandler();
    const controller = context.getClass();
    let rules = this.rules.get(controller);
    if (!rules) this.rules.set(controller, (rules = new WeakMap()));
    let rule = rules.get(handler);
    if (!rule) {
      const targets = [handler, controller] as RouteTargets;
      const anyScope = this.reflector.getAllAndOverride<boolean>(ANY_SCOPE_KEY, targets) === true;
      const scopes = anyScope ? [] : (this.reflector.getAllAndOverride<string[] | undefined>(SCOPES_KEY, targets) ?? []);
      rule = {
        isPublic: this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets) === true,
        problem: accessDeclarationProblem(this.reflector, targets),
        scopes,
        roles: this.reflector.getAllAndOverride<string[] | undefined>(ROLES_KEY, targets),
      };
      rules.set(handler, rule);
    }
    return rule;
  }

  /**
   * What passport gets instead of the request. Passport's `authenticate` adds `login`, `logout`,
   * `isAuthenticated`, `authInfo` and the user to the object it is given; done to every request, that changed the
   * shape of Node's request objects mid-flight and made the whole Express/Nest pipeline slower (0.41 -> 0.31 ms
   * of CPU per `/api/resource` request when it stopped). The view holds what the strategy reads.
   *
   * Passport also keeps strategies in one process-wide registry, so with several applications in one process (as
   * the multi-instance tests run them) the last one created would verify every application's tokens against its
   * own keys and revocation list. Passport looks the strategy up synchronously right after this call, so handing
   * it this application's strategy here cannot interleave with another request.
   */
  override getRequest(context: ExecutionContext): PassportView {
    passport.use('bearer', this.strategy);
    const req = context.switchToHttp().getRequest<RequestWithPrincipal>();
    const view: PassportView = { headers: { authorization: req.headers.authorization }, query: req.query, body: req.body as unknown };
    this.views.set(context, view);
    return view;
  }

  /** Passport's outcome: a principal, or a failure with an HTTP status (400) or a challenge (401). */
  override handleRequest<TUser = AuthPrincipal>(
    err: unknown,
    user: TUser | false,
    info: unknown,
    _ctx: ExecutionContext,
    status?: unknown,
  ): TUser {
    if (err) throw err;
    if (user) return user;
    if (status === 400) {
      throw new HttpProblemError(
        400,
        'invalid-request',
        'The Authorization header is malformed, or the token was sent more than one way.',
        {
          'WWW-Authenticate': 'Bearer error="invalid_request"',
        },
      );
    }
    if (typeof info === 'string' && info.includes('error="invalid_token"'))
      throw invalidToken('The access token is invalid, expired or revoked.');
    throw new HttpProblemError(401, 'unauthorized', 'An access token is required.', { 'WWW-Authenticate': 'Bearer realm="api"' });
  }

  private async checkRole(principal: AuthPrincipal, roles: string[]): Promise<void> {
    this.roles ??= this.moduleRef.get(RoleDirectory, { strict: false });
    if (!this.roles) throw new Error('@Roles() needs a RoleDirectory provider (the users module provides one)');
    const role = await this.roles.roleOf(principal.sub);
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

function invalidToken(detail: string): HttpProblemError {
  return new HttpProblemError(401, 'invalid-token', detail, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
}
