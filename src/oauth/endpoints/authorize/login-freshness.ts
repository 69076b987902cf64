import type { CurrentSession } from '../../interaction/sessions.service';
import type { AuthorizationRequestResult } from './authorization-request';

type ValidRequest = Extract<AuthorizationRequestResult, { kind: 'valid' }>;

/** Whether the request asks for a new login whatever the session: prompt=login or select_account. */
export function asksForLogin(request: ValidRequest): boolean {
  return request.prompt.has('login') || request.prompt.has('select_account');
}

/**
 * The oldest login (epoch ms, as sessions keep `auth_time`) that answers the request: `max_age`'s bound (Core
 * 3.1.2.1), and for a pushed request that sent the person to log in, a login after it did so.
 */
export function minAuthTimeOf(request: ValidRequest, now = Date.now()): number {
  const maxAge = request.maxAge === null ? 0 : now - request.maxAge * 1000;
  return Math.max(maxAge, request.pushed?.loginAfter ?? 0);
}

/**
 * Whether the session's login answers what a pushed request asks of it, at its consent form's post (which the
 * person can send without the visit that asks for the login). A request not pushed: its form carries neither.
 */
export function pushedLoginAnswered(request: ValidRequest, session: CurrentSession): boolean {
  if (request.pushed === null) return true;
  return !asksForLogin(request) && session.authTime >= minAuthTimeOf(request);
}
