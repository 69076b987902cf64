import { Injectable } from '@nestjs/common';
import type { AuditContext } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { parseBasicCredentials } from './basic-credentials';
import { hashSecret, safeEqual } from '../../crypto/secrets';
import { ClientsService } from '../clients/clients.service';
import type { Client } from '../entities/client.entity';
import { OAuthError } from '../oauth-error';
import { ClientAssertionVerifier, JWT_BEARER_ASSERTION_TYPE, assertionSubject } from './client-assertion';

/** What a token-endpoint request presents to authenticate its client. */
export interface ClientCredentials {
  /** The Authorization header, if any. */
  authorization?: string;
  clientId?: string;
  clientSecret?: string;
  /** RFC 7521 4.2 `client_assertion_type` and `client_assertion` (`private_key_jwt`). */
  clientAssertionType?: string;
  clientAssertion?: string;
  /** The path called (`/token`, `/revoke`, `/introspect`): an assertion's `aud` may name it. */
  endpoint?: string;
}

const DUMMY_SECRET_HASH = hashSecret('no-such-client');

const FAILURE_EVENTS_PER_MINUTE = 10;

/**
 * At most `limit` events per key and window: {@link admit} answers undefined for one to leave out, else how many
 * were left out since the last one admitted (so a flood of failures costs a few rows, and the rows say how many).
 */
class EventBudget {
  private readonly windows = new Map<string, { start: number; count: number; suppressed: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  admit(key: string, now: number): number | undefined {
    let window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      if (this.windows.size >= 10_000) this.windows.clear();
      window = { start: now, count: 0, suppressed: window?.suppressed ?? 0 };
      this.windows.set(key, window);
    }
    if (window.count >= this.limit) {
      window.suppressed += 1;
      return undefined;
    }
    window.count += 1;
    const suppressed = window.suppressed;
    window.suppressed = 0;
    return suppressed;
  }
}

/** Authenticates the client of a /token, /revoke or /introspect request (see {@link ClientAuthGuard}). */
@Injectable()
export class ClientAuthenticator {
  /** Failed authentications are counted, not each written, past a few a minute per client (unknown ones together). */
  private readonly failureEvents = new EventBudget(FAILURE_EVENTS_PER_MINUTE, 60_000);

  constructor(
    private readonly clients: ClientsService,
    private readonly audit: AuditService,
    private readonly assertions: ClientAssertionVerifier,
  ) {}

  /**
   * Client authentication at /token, /revoke and /introspect: `client_secret_basic`, `client_secret_post`,
   * `private_key_jwt`, or `none` for public clients. Two methods at once is `invalid_request`. A failure (`invalid_client`) is a
   * `client.authentication_failed` event, naming the client when it exists.
   */
  async authenticate(credentials: ClientCredentials, context: AuditContext): Promise<Client> {
    try {
      return await this.checkCredentials(credentials);
    } catch (error) {
      if (error instanceof OAuthError && error.error === 'invalid_client') {
        const named =
          parseBasicCredentials(credentials.authorization)?.id ??
          credentials.clientId ??
          (credentials.clientAssertion !== undefined ? assertionSubject(credentials.clientAssertion) : undefined);
        const known = named !== undefined ? await this.clients.find(named) : undefined;
        const suppressed = this.failureEvents.admit(known?.id ?? '', Date.now());
        if (suppressed !== undefined) {
          const details = { reason: known ? error.description : 'no such client', ...(suppressed ? { suppressed } : {}) };
          await this.audit.record(
            { type: 'client.authentication_failed', actor: 'anonymous', clientId: known?.id ?? null, details },
            context,
          );
        }
      }
      throw error;
    }
  }

  private async checkCredentials(credentials: ClientCredentials): Promise<Client> {
    const header = credentials.authorization;
    if (credentials.clientAssertion !== undefined || credentials.clientAssertionType !== undefined) {
      if (header !== undefined || credentials.clientSecret !== undefined) {
        throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
      }
      return this.checkAssertion(credentials);
    }
    const parsed = parseBasicCredentials(header);
    if (header !== undefined && parsed === undefined) {
      throw new OAuthError('invalid_client', 'Unsupported client authentication.', true);
    }
    if (parsed === null) throw new OAuthError('invalid_client', 'Malformed Basic credentials.', true);
    const basic = parsed;
    const usedBasic = basic !== undefined;
    if (basic && credentials.clientSecret !== undefined) {
      throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
    }
    if (basic && credentials.clientId !== undefined && credentials.clientId !== basic.id) {
      throw new OAuthError('invalid_request', 'client_id does not match the authenticated client.');
    }
    const clientId = basic?.id ?? credentials.clientId;
    const secret = basic?.secret ?? credentials.clientSecret;
    if (!clientId) throw new OAuthError('invalid_client', 'Client authentication is required.', usedBasic);

    const client = await this.clients.find(clientId);
    if (!client) {
      safeEqual(DUMMY_SECRET_HASH, hashSecret(secret ?? ''));
      throw new OAuthError('invalid_client', 'Client authentication failed.', usedBasic);
    }
    if (client.isPublic) {
      if (secret !== undefined && secret !== '') {
        throw new OAuthError('invalid_client', 'A public client has no secret.', usedBasic);
      }
      return client;
    }
    if (client.tokenEndpointAuthMethod === 'private_key_jwt') {
      throw new OAuthError('invalid_client', 'This client authenticates with private_key_jwt.', usedBasic);
    }
    if (secret === undefined || !client.secretHash || !safeEqual(client.secretHash, hashSecret(secret))) {
      throw new OAuthError('invalid_client', 'Client authentication failed.', usedBasic);
    }
    const method = usedBasic ? 'client_secret_basic' : 'client_secret_post';
    if (client.tokenEndpointAuthMethod !== null && client.tokenEndpointAuthMethod !== method) {
      throw new OAuthError('invalid_client', `This client authenticates with ${client.tokenEndpointAuthMethod}.`, usedBasic);
    }
    return client;
  }

  /** `private_key_jwt`: the client is the assertion's `sub` (or `client_id`, which must then be the same). */
  private async checkAssertion(credentials: ClientCredentials): Promise<Client> {
    if (credentials.clientAssertionType !== JWT_BEARER_ASSERTION_TYPE) {
      throw new OAuthError('invalid_client', `client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE}.`);
    }
    const assertion = credentials.clientAssertion;
    if (!assertion) throw new OAuthError('invalid_client', 'client_assertion is required with client_assertion_type.');
    const subject = assertionSubject(assertion);
    if (credentials.clientId !== undefined && subject !== undefined && credentials.clientId !== subject) {
      throw new OAuthError('invalid_client', 'client_id does not match the client assertion.');
    }
    const clientId = credentials.clientId ?? subject;
    const client = clientId ? await this.clients.find(clientId) : undefined;
    if (!client) throw new OAuthError('invalid_client', 'Client authentication failed.');
    if (client.tokenEndpointAuthMethod !== 'private_key_jwt') {
      throw new OAuthError('invalid_client', 'This client does not authenticate with private_key_jwt.');
    }
    await this.assertions.verify(client, assertion, credentials.endpoint ?? '/token');
    return client;
  }
}
