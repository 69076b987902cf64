/** A problem+json answer with a given status, code and extra headers (e.g. `WWW-Authenticate`). */
export class HttpProblemError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpProblemError';
  }
}
