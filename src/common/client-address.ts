import { isIP } from 'node:net';
import type { Request } from 'express';

/** The address of each request, worked out once. */
const addresses = new WeakMap<Request, string | undefined>();

/**
 * The address a request came from, as far as this service can know it: the peer of the connection; behind a
 * trusted proxy (TRUST_PROXY), the address that proxy saw — the last `X-Forwarded-For` entry, which the proxy
 * wrote, not the first one Express takes for `req.ip`, which the client wrote. Only an IP address (anything else,
 * e.g. a forged header's text, is undefined), so it is safe to store, log and count by.
 */
export function clientAddress(req: Request): string | undefined {
  if (addresses.has(req)) return addresses.get(req);
  // Express parses X-Forwarded-For on every read of `req.ips` (3 µs); without that header there is nothing to parse.
  const forwarded = (req.headers['x-forwarded-for'] === undefined ? undefined : req.ips.at(-1)) ?? req.socket.remoteAddress;
  const address = forwarded !== undefined && isIP(forwarded) ? forwarded : undefined;
  addresses.set(req, address);
  return address;
}
