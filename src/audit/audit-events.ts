import { type ExecutionContext, createParamDecorator } from '@nestjs/common';
import type { Request } from 'express';
import type { RequestWithPrincipal } from '../auth/auth.decorators';
import { clientAddress } from '../common/client-address';
import { requestIdOf } from '../common/request-id.middleware';

/** The security events the service records, each in the same transaction as the change it describes. */
export const AUDIT_EVENT_TYPES = [
  'login.succeeded',
  'login.failed',
  'logout',
  'consent.granted',
  'consent.denied',
  'code.issued',
  'code.redeemed',
  'code.replayed',
  'refresh.rotated',
  'refresh.reused',
  'token.revoked',
  'token.exchanged',
  'device.requested',
  'device.approved',
  'device.denied',
  'device.redeemed',
  'grant.revoked',
  'client.authentication_failed',
  'client.created',
  'client.updated',
  'client.secret_rotated',
  'client.deleted',
  'key.rotated',
  'factor.enrolled',
  'factor.removed',
  'recovery_code.used',
  'user.password_changed',
  'user.password_reset_sent',
  'user.email_changed',
  'user.role_changed',
  'user.provisioned',
  'identity.linked',
  'connection.created',
  'connection.deleted',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** Where a request came from: the caller's address (see `clientAddress`) and its request id. */
export interface AuditContext {
  address: string | null;
  requestId: string | null;
}

/** For what no request caused (a timer, the command line). */
export const NO_REQUEST: AuditContext = { address: null, requestId: null };

export function auditContextOf(req: Request): AuditContext {
  return { address: clientAddress(req) ?? null, requestId: requestIdOf(req) };
}

/** The request's {@link AuditContext}, as a controller parameter: `@Origin() origin: AuditContext`. */
export const Origin = createParamDecorator((_data: unknown, ctx: ExecutionContext): AuditContext =>
  auditContextOf(ctx.switchToHttp().getRequest<Request>()),
);

/**
 * Who did it: `user:<id>` (a signed-in person, or an administrator's token), `client:<id>` (a client
 * authenticated at the token endpoints), `system` (a timer, the command line) or `anonymous`.
 */
export type AuditActor = `user:${string}` | `client:${string}` | 'system' | 'anonymous';

export interface AuditEventInput {
  type: AuditEventType;
  actor: AuditActor;
  /** The person the event is about, if any. */
  userId?: string | null;
  /** The client the event is about, if any. */
  clientId?: string | null;
  /** A few plain facts (a scope, a reason); never a secret, a token, a password or an unknown email address. */
  details?: Record<string, string | number | boolean | null>;
}

/** Who made a change, and from where: what a service records its event with. */
export interface AuditBy {
  actor: AuditActor;
  context: AuditContext;
}

/**
 * The authenticated caller of the request and where it came from, as a controller parameter:
 * `@AuditedBy() by: AuditBy` (an administrator's token: `user:<id>`; a client's own token: `client:<id>`).
 */
export const AuditedBy = createParamDecorator((_data: unknown, ctx: ExecutionContext): AuditBy => {
  const req = ctx.switchToHttp().getRequest<RequestWithPrincipal>();
  const principal = req.principal;
  const actor: AuditActor = !principal ? 'anonymous' : principal.kind === 'client' ? `client:${principal.sub}` : `user:${principal.sub}`;
  return { actor, context: auditContextOf(req) };
});

/** A change made by the service itself or from the command line. */
export const BY_SYSTEM: AuditBy = { actor: 'system', context: NO_REQUEST };
