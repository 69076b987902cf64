import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Request } from 'express';
import type { Repository } from 'typeorm';
import { parseBasicCredentials } from '../common/basic-credentials';
import { Client } from './entities/client.entity';
import { OAuthError } from './oauth-error';
import { SCOPES, isScope } from './scopes';
import { hashSecret, randomSecret, safeEqual } from './secrets';

export interface CreateClientInput {
  name: string;
  redirectUris: string[];
  isPublic?: boolean;
  trusted?: boolean;
  scope?: string;
}

export interface ClientView {
  client_id: string;
  client_secret?: string;
  name: string;
  redirect_uris: string[];
  scope: string;
  public: boolean;
  trusted: boolean;
}

export class InvalidClientInputError extends Error {
  override name = 'InvalidClientInputError';
}

const DUMMY_SECRET_HASH = hashSecret('no-such-client');

@Injectable()
export class ClientsService {
  constructor(@InjectRepository(Client) private readonly clients: Repository<Client>) {}

  async create(input: CreateClientInput): Promise<ClientView> {
    const name = input.name?.trim();
    if (!name || name.length > 100) throw new InvalidClientInputError('--name must be 1 to 100 characters');
    if (!input.redirectUris.length) throw new InvalidClientInputError('at least one --redirect-uri is required');
    for (const uri of input.redirectUris) {
      let parsed: URL;
      try {
        parsed = new URL(uri);
      } catch {
        throw new InvalidClientInputError(`--redirect-uri "${uri}" is not an absolute URL`);
      }
      if (parsed.hash || uri.includes('#')) throw new InvalidClientInputError(`--redirect-uri "${uri}" must not have a fragment`);
      if (!/^[a-z][a-z0-9+.-]*:$/.test(parsed.protocol)) throw new InvalidClientInputError(`--redirect-uri "${uri}" has no valid scheme`);
    }
    const scopes = (input.scope ?? SCOPES.join(' ')).split(' ').filter(Boolean);
    const unknown = scopes.filter((s) => !isScope(s));
    if (unknown.length || scopes.length === 0) {
      throw new InvalidClientInputError(`--scope must be a subset of: ${SCOPES.join(' ')}`);
    }
    const secret = input.isPublic ? undefined : randomSecret(32);
    const client = this.clients.create({
      id: randomSecret(16),
      secretHash: secret ? hashSecret(secret) : null,
      name,
      redirectUris: [...new Set(input.redirectUris)],
      scope: [...new Set(scopes)].join(' '),
      isPublic: Boolean(input.isPublic),
      trusted: Boolean(input.trusted),
      createdAt: Date.now(),
    });
    await this.clients.insert(client);
    return { ...ClientsService.view(client), ...(secret ? { client_secret: secret } : {}) };
  }

  static view(client: Client): ClientView {
    return {
      client_id: client.id,
      name: client.name,
      redirect_uris: client.redirectUris,
      scope: client.scope,
      public: client.isPublic,
      trusted: client.trusted,
    };
  }

  async find(clientId: string): Promise<Client | undefined> {
    if (!clientId || clientId.length > 64) return undefined;
    return (await this.clients.findOne({ where: { id: clientId } })) ?? undefined;
  }

  /**
   * Client authentication at /token, /revoke and /introspect: `client_secret_basic`, `client_secret_post`, or
   * `none` for public clients. Two methods at once is `invalid_request`.
   */
  async authenticate(req: Request, body: Record<string, string>): Promise<Client> {
    const header = req.headers.authorization;
    const parsed = parseBasicCredentials(header);
    if (header !== undefined && parsed === undefined) {
      throw new OAuthError('invalid_client', 'Unsupported client authentication.', true);
    }
    if (parsed === null) throw new OAuthError('invalid_client', 'Malformed Basic credentials.', true);
    const basic = parsed;
    const usedBasic = basic !== undefined;
    if (basic && body.client_secret !== undefined) {
      throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
    }
    if (basic && body.client_id !== undefined && body.client_id !== basic.id) {
      throw new OAuthError('invalid_request', 'client_id does not match the authenticated client.');
    }
    const clientId = basic?.id ?? body.client_id;
    const secret = basic?.secret ?? body.client_secret;
    if (!clientId) throw new OAuthError('invalid_client', 'Client authentication is required.', usedBasic);

    const client = await this.find(clientId);
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
    if (secret === undefined || !client.secretHash || !safeEqual(client.secretHash, hashSecret(secret))) {
      throw new OAuthError('invalid_client', 'Client authentication failed.', usedBasic);
    }
    return client;
  }
}
