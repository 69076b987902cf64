import type { IncomingMessage } from 'node:http';

/** How deep a JSON body may nest objects and arrays: far more than any body of the API, far less than a stack. */
export const MAX_JSON_DEPTH = 32;

/** The error body-parser passes on (its `type` is mapped to 400 by the problem-details filter). */
export class JsonTooDeepError extends Error {
  readonly status = 400;
  readonly type = 'entity.too.deep';
}

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The deepest nesting of objects and arrays in JSON text (strings skipped; bytes of UTF-8 never look like ASCII). */
export function jsonDepth(body: Uint8Array, stopAbove = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) break;
      }
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth--;
    }
  }
  return deepest;
}

/**
 * body-parser's `verify` hook for JSON: refuses a body nested deeper than `max` before it is parsed, so that no
 * later recursion over it (class-transformer's, a module's own) can run out of stack.
 */
export function rejectDeepJson(max = MAX_JSON_DEPTH) {
  return (_req: IncomingMessage, _res: unknown, body: Buffer): void => {
    if (jsonDepth(body, max) > max) throw new JsonTooDeepError(`The request body is nested deeper than ${max} levels.`);
  };
}
