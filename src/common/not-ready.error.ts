import type { Response } from 'express';

/**
 * Readiness answering "not ready" (the instance is draining, or its database does not answer): a 503 that is the
 * check's answer, met on every instance at every deploy, not a fault. The problem filter answers it without logging.
 */
export class NotReadyError extends Error {
  constructor() {
    super('not ready');
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
