import { UnsupportedMediaTypeException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';

/** Whether a request announces a body (a length above zero, or a chunked one). */
function announcesBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** A body of a media type no parser took. (The OAuth form endpoints answer it as their 400 invalid_request.) */
export class UnreadBodyError extends UnsupportedMediaTypeException {
  constructor() {
    super('The request body is of a media type this service does not take (JSON or a form).');
  }
}

/**
 * After the body parsers (JSON, forms): a body none of them read is of a media type no route takes. It is refused
 * with 415 here rather than reaching a handler as "no body" (which read as a 400 about missing fields). A module
 * that takes another media type registers its parser before this, in `configureApp`.
 */
export function refuseUnreadBody(req: Request, _res: Response, next: NextFunction): void {
  if (announcesBody(req) && !req.readableEnded) {
    next(new UnreadBodyError());
    return;
  }
  next();
}
