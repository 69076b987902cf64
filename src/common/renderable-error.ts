import type { Response } from 'express';

/** An error that knows its own HTTP answer (OAuth error bodies, HTML error pages, bearer challenges). */
export abstract class RenderableError extends Error {
  abstract render(res: Response): void;
}

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
