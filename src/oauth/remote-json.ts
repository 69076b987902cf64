import { Injectable } from '@nestjs/common';

/**
 * Fetches a JSON document from a URL a client registered (its `jwks_uri`). Whoever implements it decides what may
 * be fetched; a failure of any kind is a rejected promise.
 */
export abstract class RemoteJsonFetcher {
  abstract fetchJson(url: string): Promise<unknown>;
}

export class RemoteJsonError extends Error {
  override name = 'RemoteJsonError';
}

const TIMEOUT_MS = 5_000;
const MAX_BYTES = 64 * 1024;

/**
 * The minimal {@link RemoteJsonFetcher}: https only, no redirects, 5 seconds, at most 64 KB, JSON only. It does not
 * check where the address resolves to (private networks, loopback), which a hardened fetcher bound in its place must.
 */
@Injectable()
export class FetchRemoteJson extends RemoteJsonFetcher {
  async fetchJson(url: string): Promise<unknown> {
    if (!URL.canParse(url) || new URL(url).protocol !== 'https:') throw new RemoteJsonError('only https URLs are fetched');
    const res = await fetch(url, {
      redirect: 'error',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { accept: 'application/json, application/jwk-set+json' },
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new RemoteJsonError(`answered ${res.status}`);
    }
    if (Number(res.headers.get('content-length') ?? 0) > MAX_BYTES) {
      await res.body?.cancel();
      throw new RemoteJsonError(`larger than ${MAX_BYTES} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > MAX_BYTES) throw new RemoteJsonError(`larger than ${MAX_BYTES} bytes`);
      chunks.push(chunk);
    }
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    } catch {
      throw new RemoteJsonError('not JSON');
    }
  }
}
