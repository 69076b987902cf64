import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger, NotFoundException } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Request, Response } from 'express';
import { allowedMethods } from './allowed-methods';
import { CHALLENGE_HOOK, type ChallengeHook } from './challenge-hook';
import { CommonError, DomainError, ValidationFailedError, domainErrorDefinition } from './domain-error';
import { isDatabaseUnavailable } from '../database/database-errors';
import { JsonTooDeepError } from './json-body';
import { problem, sendProblem } from './problem';
import { HttpProblemError } from './http-problem.error';
import { NotReadyError, markStatusExpected } from './not-ready.error';
import { requestIdOf } from './request-id.middleware';
import { UnreadBodyError } from './unread-body';

/** Paths whose errors keep the OAuth 2.0 format (RFC 6749 5.2) instead of problem+json. */
const OAUTH_JSON_PATHS = new Set(['/token', '/revoke', '/introspect', '/par', '/device_authorization']);
/** Statuses RFC 6749 5.2 has an error code for; others (429, 5xx) stay problem+json there too. */
const OAUTH_STATUSES = new Set([400, 401, 413, 415]);

/**
 * The error code of an answer that keeps an OAuth JSON format (`{ error, error_description }`) instead of
 * problem+json: RFC 6749 5.2 at the token, revocation and introspection endpoints, RFC 7591 3.2.2 for a
 * registration body the parsers or field checks refuse. Undefined: problem+json.
 */
function oauthErrorCode(path: string, status: number): string | undefined {
  if (OAUTH_JSON_PATHS.has(path) && OAUTH_STATUSES.has(status)) return status === 401 ? 'invalid_client' : 'invalid_request';
  if (status === 400 && (path === '/register' || path.startsWith('/register/'))) return 'invalid_client_metadata';
  return undefined;
}

const BODY_PARSER_STATUS: Record<string, number> = {
  'entity.parse.failed': 400,
  'entity.too.deep': 400,
  'entity.too.large': 413,
  'encoding.unsupported': 415,
  'charset.unsupported': 415,
  'request.aborted': 400,
  'request.size.invalid': 400,
  'stream.encoding.set': 500,
  'parameters.too.many': 413,
};

/** What a client is told of a body-parser error: by status, or by type where a status has several. */
const BODY_PARSER_DETAIL: Record<string | number, string> = {
  413: 'The request body is too large.',
  415: 'The request body encoding is not supported.',
  'entity.parse.failed': 'The request body is not valid JSON.',
};

/** Maps every error to one answer: problem+json for the API, the RFC format for OAuth endpoints. */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');
  /** What the application's challenge issuer adds to a challenge ({@link ChallengeHook}); null: none provides one. */
  private challengeHook: ChallengeHook | null | undefined;

  constructor(private readonly moduleRef: ModuleRef) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    if (res.headersSent) {
      this.logger.error({ requestId: requestIdOf(req), err: describe(exception) }, 'error after headers were sent');
      return;
    }
    if (exception instanceof NotReadyError) {
      markStatusExpected(res);
      if (!exception.draining) this.logger.warn({ requestId: requestIdOf(req) }, exception.message);
    }
    const instance = req.originalUrl?.split('?')[0] ?? req.url;
    // No route matched (Nest's not-found handler): when the path exists with other methods, 405 with Allow.
    if (exception instanceof NotFoundException && req.route === undefined && this.answeredMethodMiss(req, res, instance)) return;
    const { status, detail, code, headers, errors } = this.classify(exception, req);
    const oauthError = oauthErrorCode(req.path, status);
    if (oauthError) {
      // A body that is not a form at all is a malformed request there (RFC 6749 5.2; the contract's /token rule).
      res.status(exception instanceof UnreadBodyError ? 400 : status).setHeader('Cache-Control', 'no-store');
      res.json({ error: oauthError, error_description: detail });
      return;
    }
    const challenge = headers['WWW-Authenticate'];
    if (challenge !== undefined) headers['WWW-Authenticate'] = this.completed(challenge);
    sendProblem(res, problem(status, detail, instance, code, errors), headers);
  }

  /** The challenge as the module that issues challenges completes it; looked up once, in any module of the application. */
  private completed(challenge: string): string {
    if (this.challengeHook === undefined) {
      try {
        this.challengeHook = this.moduleRef.get<ChallengeHook>(CHALLENGE_HOOK, { strict: false });
      } catch {
        this.challengeHook = null;
      }
    }
    return this.challengeHook ? this.challengeHook(challenge) : challenge;
  }

  /** 405 with `Allow` (RFC 9110 15.5.6) for a method the path's routes do not have; OPTIONS gets 204 and `Allow`. */
  private answeredMethodMiss(req: Request, res: Response, instance: string): boolean {
    const allowed = allowedMethods(req.app, req.path);
    if (allowed.length === 0) return false;
    if (req.method === 'OPTIONS') {
      res.status(204).setHeader('Allow', [...allowed, 'OPTIONS'].join(', '));
      res.end();
      return true;
    }
    const detail = `${req.method} is not allowed on this resource; allowed: ${allowed.join(', ')}.`;
    sendProblem(res, problem(405, detail, instance), { Allow: allowed.join(', ') });
    return true;
  }

  private classify(exception: unknown, req: Request) {
    const headers: Record<string, string> = {};
    if (exception instanceof ValidationFailedError) {
      return { status: 400, detail: exception.message, code: 'validation-error', headers, errors: exception.errors };
    }
    if (exception instanceof NotReadyError)
      return { status: 503, detail: 'The service is temporarily unavailable.', code: undefined, headers };
    if (exception instanceof HttpProblemError) {
      return { status: exception.status, detail: exception.message, code: exception.code, headers: { ...exception.headers } };
    }
    const definition = exception instanceof DomainError ? domainErrorDefinition(exception.code) : undefined;
    if (exception instanceof DomainError && definition) {
      return { status: definition.status, detail: exception.message, code: exception.code, headers: { ...definition.headers } };
    }
    // Express's adapter wraps body-parser errors in an HttpException; the original (with its `type`) is the cause.
    const bodyError = (exception instanceof HttpException ? exception.cause : exception) as { type?: string } | undefined;
    if (bodyError && typeof bodyError.type === 'string' && bodyError.type in BODY_PARSER_STATUS) {
      const status = BODY_PARSER_STATUS[bodyError.type];
      // The service's own check (depth) says what is wrong; body-parser's messages are not for clients.
      const detail =
        bodyError instanceof JsonTooDeepError
          ? bodyError.message
          : (BODY_PARSER_DETAIL[status] ?? BODY_PARSER_DETAIL[bodyError.type] ?? 'The request body could not be read.');
      return { status, detail, code: undefined, headers };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const detail =
        status === 503 ? 'The service is temporarily unavailable.' : status >= 500 ? 'An internal error occurred.' : exception.message;
      if (status >= 500) this.logError(exception, req);
      return { status, detail, code: undefined, headers };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logError(exception, req);
      headers['Retry-After'] = '5';
      return { status: 503, detail: 'The service is temporarily unavailable.', code: CommonError.DatabaseUnavailable, headers };
    }
    this.logError(exception, req);
    return { status: 500, detail: 'An internal error occurred.', code: undefined, headers };
  }

  private logError(exception: unknown, req: Request): void {
    this.logger.error({ requestId: requestIdOf(req), method: req.method, path: req.path, err: describe(exception) }, 'request failed');
  }
}

function describe(exception: unknown): string {
  return exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
}
