import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuditBy } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { DomainError } from '../common/domain-error';
import { KeysConfig } from '../keys/keys.config';
import { SecretSealing } from '../keys/secret-sealing';
import type { Connection } from './connection.entity';
import { ConnectionsError } from './connections.errors';
import { ConnectionsRepository } from './connections.repository';
import type { CreateConnectionDto } from './dto/create-connection.dto';

/** A connection as the admin API shows it: never its client secret, only whether it has one. */
export interface ConnectionView {
  id: string;
  name: string;
  type: string;
  issuer: string;
  client_id: string;
  has_client_secret: boolean;
  domains: string[];
  trust_upstream_mfa: boolean;
  /** Null: the connection sets no role. */
  admin_groups: string[] | null;
  created_at: string;
}

function viewOf(connection: Connection): ConnectionView {
  return {
    id: connection.id,
    name: connection.name,
    type: connection.type,
    issuer: connection.issuer,
    client_id: connection.clientId,
    has_client_secret: connection.clientSecret !== null,
    domains: connection.domains.split(' '),
    trust_upstream_mfa: connection.trustUpstreamMfa,
    admin_groups: connection.adminGroups === null ? null : connection.adminGroups.split(' ').filter(Boolean),
    created_at: new Date(connection.createdAt).toISOString(),
  };
}

const notFound = () => new DomainError(ConnectionsError.NotFound, 'There is no connection with this id.');

/** The company sign-in connections: what administrators manage (audited), and which one serves an address. */
@Injectable()
export class ConnectionsService {
  private readonly sealing: SecretSealing;

  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly audit: AuditService,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    keys: KeysConfig,
  ) {
    this.sealing = new SecretSealing(keys);
  }

  async create(dto: CreateConnectionDto, by: AuditBy): Promise<ConnectionView> {
    const now = Date.now();
    const id = randomUUID();
    const domains = [...new Set(dto.domains)];
    const connection: Connection = {
      id,
      name: dto.name,
      type: dto.type,
      issuer: dto.issuer,
      clientId: dto.client_id,
      clientSecret: dto.client_secret === undefined ? null : this.sealing.seal(`connection:${id}`, dto.client_secret),
      domains: domains.join(' '),
      trustUpstreamMfa: dto.trust_upstream_mfa ?? false,
      adminGroups: dto.admin_groups === undefined ? null : [...new Set(dto.admin_groups)].join(' '),
      createdAt: now,
      updatedAt: now,
    };
    const event = AuditService.event(
      { type: 'connection.created', actor: by.actor, details: { connection: id, name: dto.name } },
      by.context,
      now,
    );
    await this.transactions.withTransaction(async () => {
      // One connection per domain: the login form must know where to send an address.
      const taken = (await this.connections.list()).flatMap((other) => other.domains.split(' ')).filter((d) => domains.includes(d));
      if (taken.length) throw new DomainError(ConnectionsError.DomainTaken, `Another connection serves ${taken.join(', ')}.`);
      await this.connections.insert(connection);
      await this.audit.write(event);
    });
    this.audit.log(event);
    return viewOf(connection);
  }

  async list(): Promise<ConnectionView[]> {
    return (await this.connections.list()).map(viewOf);
  }

  async get(id: string): Promise<ConnectionView> {
    const found = await this.connections.find(id);
    if (!found) throw notFound();
    return viewOf(found);
  }

  async delete(id: string, by: AuditBy): Promise<void> {
    const event = AuditService.event({ type: 'connection.deleted', actor: by.actor, details: { connection: id } }, by.context);
    const deleted = await this.transactions.withTransaction(async () => {
      if (!(await this.connections.delete(id))) return false;
      await this.audit.write(event);
      return true;
    });
    if (!deleted) throw notFound();
    this.audit.log(event);
  }

  /** The connection, for a sign-in through it. */
  async find(id: string): Promise<Connection | undefined> {
    return this.connections.find(id);
  }

  /** The connection serving an e-mail address's domain, if any. */
  async forAddress(email: string): Promise<Connection | undefined> {
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    return (await this.connections.list()).find((connection) => connection.domains.split(' ').includes(domain));
  }

  /** Every connection, for the login page's "Sign in with …" buttons. */
  all(): Promise<Connection[]> {
    return this.connections.list();
  }

  /** The client secret of a connection, opened (undefined for a public client). */
  clientSecretOf(connection: Connection): string | undefined {
    return connection.clientSecret === null ? undefined : this.sealing.open(`connection:${connection.id}`, connection.clientSecret);
  }

  seal(aad: string, value: string): string {
    return this.sealing.seal(aad, value);
  }

  open(aad: string, value: string): string {
    return this.sealing.open(aad, value);
  }
}
