import type { IncomingMessage } from 'node:http';

/** How deep a JSON body may nest objects and arrays: far more than any body of the API, far less than a stack. */
export const MAX_JSON_DEPTH = 32;

/** The errors body-parser passes on (the problem-details filter maps their `type`: 400, 415). */
export class JsonTooDeepError extends Error {
  readonly status = 400;
  readonly type = 'entity.too.deep';
}

export class JsonCharsetError extends Error {
  readonly status = 415;
  readonly type = 'charset.unsupported';
}

/**
 * JSON is UTF-8 (RFC 8259 8.1: MUST, between systems). body-parser would also decode UTF-16 and UTF-32, whose bytes
 * the depth check below cannot read (a `Ģ` in UTF-16LE holds the byte of a quote): those are refused with 415.
 */
const JSON_CHARSET = /^utf-?8$/i;

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
 * body-parser's `verify` hook for JSON, run on the raw bytes before they are decoded and parsed: refuses a charset
 * other than UTF-8 (body-parser alone lets any `utf-*` through, UTF-7 and UTF-16 included) with 415, and a body nested deeper
 * than `maxDepth` with 400, so that no later recursion over it (class-transformer's, a module's own) can run out of
 * stack.
 */
export function checkJsonBody(maxDepth = MAX_JSON_DEPTH) {
  return (_req: IncomingMessage, _res: unknown, body: Buffer, charset: string): void => {
    if (!JSON_CHARSET.test(charset)) throw new JsonCharsetError(`unsupported charset "${charset}"`);
    if (jsonDepth(body, maxDepth) > maxDepth) throw new JsonTooDeepError(`The request body is nested deeper than ${maxDepth} levels.`);
  };
}
