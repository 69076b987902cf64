import type { Response } from 'express';

/**
 * Readiness answering "not ready": a 503 that is the check's answer, not a fault. While the instance drains it is
 * met on every instance at every deploy, and the problem filter answers it without logging; otherwise (its database
 * does not answer) with one warning line, so that an outage shows in the log.
 */
export class NotReadyError extends Error {
  constructor(readonly draining: boolean) {
    super(draining ? 'not ready: draining' : 'not ready: a check is down');
    this.name = 'NotReadyError';
  }
}

/** Set on a response whose 5xx status is an expected answer (a {@link NotReadyError}'s), in Express's `res.locals`. */
const EXPECTED_STATUS = 'expectedStatus';

export function markStatusExpected(res: Response): void {
  res.locals[EXPECTED_STATUS] = true;
}

/** Whether the response's 5xx status is an answer rather than a failure: the access log logs it at info. */
export function isStatusExpected(res: Response): boolean {
  return res.locals[EXPECTED_STATUS] === true;
}
