import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { MoreThan, type Repository } from 'typeorm';
import { deleteBatchBefore } from '../database/prune-batch';
import { ConnectionLogin } from './connection-login.entity';
import { Connection } from './connection.entity';
import { Identity } from './identity.entity';

/** The connections' one way to their tables: connections, the identities they vouch for, sign-ins on their way. */
@Injectable()
export class ConnectionsRepository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get connections(): Repository<Connection> {
    return this.transactions.tx.getRepository(Connection);
  }

  private get identities(): Repository<Identity> {
    return this.transactions.tx.getRepository(Identity);
  }

  private get logins(): Repository<ConnectionLogin> {
    return this.transactions.tx.getRepository(ConnectionLogin);
  }

  async insert(connection: Connection): Promise<void> {
    await this.connections.insert(connection);
  }

  list(): Promise<Connection[]> {
    return this.connections.find({ order: { name: 'ASC', id: 'ASC' } });
  }

  async find(id: string): Promise<Connection | undefined> {
    return (await this.connections.findOne({ where: { id } })) ?? undefined;
  }

  /** Whether it was there to delete (its identities and sign-ins on their way go with it). */
  async delete(id: string): Promise<boolean> {
    return Boolean((await this.connections.delete({ id })).affected);
  }

  /** The person a connection's subject is linked to. */
  async personOf(connectionId: string, subject: string): Promise<string | undefined> {
    return (await this.identities.findOne({ select: { userId: true }, where: { connectionId, subject } }))?.userId;
  }

  /** Whether any connection vouches for the person. */
  async hasIdentities(userId: string): Promise<boolean> {
    return (await this.identities.count({ where: { userId } })) > 0;
  }

  async link(connectionId: string, subject: string, userId: string, now: number): Promise<void> {
    await this.identities.insert({ connectionId, subject, userId, createdAt: now });
  }

  async startLogin(login: ConnectionLogin): Promise<void> {
    await this.logins.insert(login);
  }

  /** Takes a live sign-in of this state (once: it is deleted as it is read); undefined when there is none. */
  async takeLogin(stateHash: string, now: number): Promise<ConnectionLogin | undefined> {
    const login = await this.logins.findOne({ where: { stateHash, expiresAt: MoreThan(now) } });
    if (!login || !(await this.logins.delete({ stateHash })).affected) return undefined;
    return login;
  }

  deleteExpiredLogins(cutoff: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.logins, 'state_hash', 'expires_at', cutoff, batch);
  }
}
