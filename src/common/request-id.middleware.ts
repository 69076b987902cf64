import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id, echoed in `X-Request-Id`. An incoming id is kept only behind a trusted proxy
 * (TRUST_PROXY), and only when it is short and plain, so a client cannot forge log lines.
 */
export function requestIdMiddleware(trustIncoming: boolean) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = req.headers['x-request-id'];
    const id = trustIncoming && typeof incoming === 'string' && SAFE_ID.test(incoming) ? incoming : randomUUID();
    (req as Request & { id: string }).id = id;
    res.setHeader('X-Request-Id', id);
    next();
  };
}

export function requestIdOf(req: Request): string {
  return (req as Request & { id?: string }).id ?? 'unknown';
}
