import { Injectable } from '@nestjs/common';
import { hashSecret, randomSecret } from '../../crypto/secrets';
import { PushedRequestsRepository } from './pushed-requests.repository';

/** RFC 9126 2.2: the prefix of every `request_uri` this server hands out. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';
/**
 * How long a pushed request may be used: long enough for the person to sign in (and step up) between the push and
 * the code, which is when it is used up.
 */
export const PUSHED_REQUEST_TTL_SECONDS = 300;

/**
 * A pushed request as /authorize reads it: its row's id, its parameters, and once its `prompt=login` or `max_age`
 * sent the person to log in, when (epoch ms): only a login after that answers it.
 */
export interface PushedRequest {
  id: string;
  params: Record<string, string>;
  loginAfter: number | null;
}

/**
 * Pushed authorization requests (RFC 9126): a client authenticates and posts its request's parameters, and gets a
 * `request_uri` to send the browser to /authorize with instead. Stored under the hash of that reference (anyone who
 * reads the table cannot use one), short-lived, and used up by the one answer it yields, on any instance.
 */
@Injectable()
export class PushedRequestsService {
  constructor(private readonly requests: PushedRequestsRepository) {}

  /** Stores a request's parameters for its client; the `request_uri` that names them. */
  async push(clientId: string, params: Record<string, string>): Promise<string> {
    const reference = randomSecret(32);
    await this.requests.insert(hashSecret(reference), clientId, JSON.stringify(params), Date.now() + PUSHED_REQUEST_TTL_SECONDS * 1000);
    return `${REQUEST_URI_PREFIX}${reference}`;
  }

  /** The parameters a `request_uri` names for this client, while it is live and unused; else undefined. */
  async resolve(requestUri: string, clientId: string): Promise<PushedRequest | undefined> {
    if (!requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > REQUEST_URI_PREFIX.length + 64) return undefined;
    const id = hashSecret(requestUri.slice(REQUEST_URI_PREFIX.length));
    const row = await this.requests.find(id, Date.now());
    if (!row || row.clientId !== clientId) return undefined;
    return { id, params: JSON.parse(row.params) as Record<string, string>, loginAfter: row.loginAfter };
  }

  /** Uses the request up (its code or refusal is answered); false when it was used already, or expired. */
  use(id: string): Promise<boolean> {
    return this.requests.use(id, Date.now());
  }

  /**
   * The login the request asks for (`prompt=login` or `select_account`, `max_age`) is asked now: those parameters
   * leave it, and from now on only a login after this moment answers it, on every visit of its `request_uri`.
   */
  async settle(request: PushedRequest): Promise<void> {
    const { max_age: _maxAge, prompt, ...rest } = request.params;
    const kept = (prompt ?? '').split(' ').filter((p) => p !== '' && p !== 'login' && p !== 'select_account');
    const params = kept.length ? { ...rest, prompt: kept.join(' ') } : rest;
    await this.requests.settle(request.id, JSON.stringify(params), Date.now());
  }
}
