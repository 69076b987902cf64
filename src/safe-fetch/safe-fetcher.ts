import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingMessage } from 'node:http';
import { type RequestOptions, request } from 'node:https';
import { type LookupFunction, isIP } from 'node:net';
import { type SecureContext, createSecureContext, rootCertificates } from 'node:tls';
import { Injectable } from '@nestjs/common';
import type { HostPolicy } from './host-policy';
import { isPublicAddress } from './special-addresses';

/** Why a remote document could not be had (no more detail than the reason is ever shown to the requester). */
export type SafeFetchFailure =
  | 'invalid-url'
  | 'not-https'
  | 'denied-host'
  | 'host-not-allowed'
  | 'unresolvable'
  | 'private-address'
  | 'busy'
  | 'timeout'
  | 'network'
  | 'redirect'
  | 'status'
  | 'too-large'
  | 'not-json';

export class SafeFetchError extends Error {
  override name = 'SafeFetchError';

  constructor(
    readonly reason: SafeFetchFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface SafeFetchOptions {
  policy: HostPolicy;
  /** The whole fetch — name lookup, connection, TLS, the response to its last byte — in milliseconds. */
  timeoutMs: number;
  /** The largest body taken, counted as it arrives (whatever Content-Length says). */
  maxBytes: number;
  /** Certificates (PEM) trusted besides Node's own root store, e.g. a company's internal CA. */
  ca?: string;
}

export interface RemoteJson {
  body: unknown;
  /** `Cache-Control: max-age` in seconds, when the response gave one. */
  maxAge?: number;
  /** `Cache-Control: no-store` or `no-cache`: the response asks not to be reused. */
  noStore: boolean;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/**
 * Name lookups at once (each holds one of the 4 threads of libuv's pool, which password hashing and file access use
 * too, until the system resolver gives up: longer than a fetch's deadline when a name server never answers).
 */
const MAX_LOOKUPS = 2;
let lookups = 0;

/**
 * The system resolver (`getaddrinfo`, so /etc/hosts counts), at most {@link MAX_LOOKUPS} at once: a lookup's slot is
 * held until the lookup itself ends, not when the fetch that wanted it gives up, so names that never resolve cannot
 * take the thread pool from logins.
 */
const systemResolver: Resolver = async (host) => {
  if (lookups >= MAX_LOOKUPS) throw new SafeFetchError('busy', 'too many name lookups at once');
  lookups += 1;
  try {
    return await dnsLookup(host, { all: true, verbatim: true });
  } finally {
    lookups -= 1;
  }
};

/** More fetches than this at once on one instance are refused rather than queued (a flood of new URLs). */
const MAX_IN_FLIGHT = 16;

/**
 * The addresses a fetch of `host` may connect to, under `policy`: a denied host is refused; with an allow list,
 * only its hosts are reached and they may resolve anywhere; otherwise every address the name resolves to (or the
 * IP literal itself) must be a public one.
 */
export async function checkedAddresses(host: string, policy: HostPolicy, resolve: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  if (policy.denied.has(host)) throw new SafeFetchError('denied-host', `the host ${host} is denied`);
  const allowedByName = policy.allowed.has(host);
  if (!policy.allowed.empty && !allowedByName)
    throw new SafeFetchError('host-not-allowed', `the host ${host} is not among the allowed hosts`);
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const family = isIP(bare);
  let addresses: ResolvedAddress[];
  if (family !== 0) {
    addresses = [{ address: bare, family }];
  } else {
    try {
      addresses = await resolve(bare);
    } catch (error) {
      if (error instanceof SafeFetchError) throw error;
      addresses = [];
    }
  }
  // One message for "no address" and "not a public address": the page must not tell whether an internal name exists.
  if (addresses.length === 0) throw new SafeFetchError('unresolvable', `the host ${host} does not resolve to a public address`);
  if (!allowedByName && addresses.some((a) => !isPublicAddress(a.address))) {
    throw new SafeFetchError('private-address', `the host ${host} does not resolve to a public address`);
  }
  return addresses;
}

/** The media type of a Content-Type header is JSON (`application/json` or `application/<something>+json`). */
function isJsonMediaType(header: string | undefined): boolean {
  const type = (header ?? '').split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(type);
}

function cacheControl(header: string | undefined): Pick<RemoteJson, 'maxAge' | 'noStore'> {
  const directives = (header ?? '')
    .toLowerCase()
    .split(',')
    .map((d) => d.trim());
  const maxAge = directives.map((d) => /^max-age="?(\d{1,10})"?$/.exec(d)).find(Boolean);
  return {
    noStore: directives.includes('no-store') || directives.includes('no-cache'),
    ...(maxAge ? { maxAge: Number(maxAge[1]) } : {}),
  };
}

/**
 * Fetches JSON documents that the requester names (a client's metadata document, its `jwks_uri`) without letting
 * the requester aim this server at anything else: https only, no redirect followed, the name resolved here and
 * every address checked before the connection, which goes to the checked address (no second lookup a DNS
 * rebinding could answer differently) while TLS still verifies the name; a deadline for the whole exchange and a
 * size limit counted as the body arrives.
 */
@Injectable()
export class SafeFetcher {
  private inFlight = 0;
  /** Per extra CA: the TLS context trusting it and Node's roots, built once (parsing the roots costs about 20 ms). */
  private readonly trustStores = new Map<string, SecureContext>();
  /** How host names are resolved (the system's resolver; a test may put another in). */
  protected resolve: Resolver = systemResolver;

  async json(raw: string, options: SafeFetchOptions): Promise<RemoteJson> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new SafeFetchError('invalid-url', 'not an absolute URL');
    }
    if (url.protocol !== 'https:') throw new SafeFetchError('not-https', 'only https URLs are fetched');
    if (url.username || url.password) throw new SafeFetchError('invalid-url', 'a URL with credentials is not fetched');
    if (this.inFlight >= MAX_IN_FLIGHT) throw new SafeFetchError('busy', 'too many fetches at once');
    this.inFlight += 1;
    // One deadline for the whole exchange: it aborts the connection, whatever stage it is at.
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new SafeFetchError('timeout', `no complete answer within ${options.timeoutMs} ms`));
        abort.abort();
      }, options.timeoutMs);
    });
    try {
      const addresses = await Promise.race([checkedAddresses(url.hostname, options.policy, this.resolve), expired]);
      return await Promise.race([this.get(url, addresses, options, abort.signal), expired]);
    } finally {
      clearTimeout(timer);
      this.inFlight -= 1;
    }
  }

  private get(url: URL, addresses: ResolvedAddress[], options: SafeFetchOptions, signal: AbortSignal): Promise<RemoteJson> {
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // Whatever the connection asks, it gets the addresses checked above and nothing else.
    const lookup: LookupFunction = (_name, opts, callback) => {
      if (opts.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    };
    // tls.connect takes a prepared `secureContext` (the types of https.request do not list it).
    const requestOptions: RequestOptions & { secureContext?: SecureContext } = {
      host,
      port: url.port || 443,
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: { Accept: 'application/json', 'User-Agent': 'oauth-resource-service' },
      lookup,
      agent: false,
      secureContext: options.ca ? this.trustStore(options.ca) : undefined,
      signal,
    };
    return new Promise<RemoteJson>((resolve, reject) => {
      const req = request(requestOptions);
      const fail = (error: SafeFetchError) => {
        reject(error);
        req.destroy();
      };
      req.on('error', (error: NodeJS.ErrnoException) => {
        fail(error instanceof SafeFetchError ? error : new SafeFetchError('network', `the connection failed (${error.code ?? 'error'})`));
      });
      req.on('response', (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) return fail(new SafeFetchError('redirect', `answered ${status}: redirects are not followed`));
        if (status !== 200) return fail(new SafeFetchError('status', `answered ${status}`));
        if (!isJsonMediaType(res.headers['content-type']))
          return fail(new SafeFetchError('not-json', 'the answer is not application/json'));
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > options.maxBytes) {
          return fail(new SafeFetchError('too-large', `the answer is larger than ${options.maxBytes} bytes`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) fail(new SafeFetchError('too-large', `the answer is larger than ${options.maxBytes} bytes`));
          else chunks.push(chunk);
        });
        res.on('error', (error: NodeJS.ErrnoException) =>
          fail(new SafeFetchError('network', `the connection failed (${error.code ?? 'error'})`)),
        );
        res.on('end', () => {
          if (size > options.maxBytes) return;
          let body: unknown;
          try {
            body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)));
          } catch {
            return fail(new SafeFetchError('not-json', 'the answer is not valid JSON'));
          }
          resolve({ body, ...cacheControl(res.headers['cache-control']) });
        });
      });
      req.end();
    });
  }

  private trustStore(ca: string): SecureContext {
    let store = this.trustStores.get(ca);
    if (!store) {
      store = createSecureContext({ ca: [...rootCertificates, ca] });
      this.trustStores.set(ca, store);
    }
    return store;
  }
}
