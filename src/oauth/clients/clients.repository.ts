import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { And, IsNull, LessThan, Not, type Repository } from 'typeorm';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, type Write, sql } from '../../database/sql';
import { ClientAssertionJti } from '../entities/client-assertion-jti.entity';
import { Client } from '../entities/client.entity';

/**
 * A URL client allowed for the first time: its row. A registered client's row is never touched (ids never collide).
 * Hand-written: whether ON CONFLICT DO NOTHING inserted is its affected-row count, which TypeORM's InsertResult lacks on SQLite.
 */
const INSERT_CLIENT = sql`
  INSERT INTO clients (id, secret_hash, name, redirect_uris, scope, is_public, grant_types, refresh_grace_seconds, resources,
    post_logout_redirect_uris, registration_token_hash, token_endpoint_auth_method, jwks, jwks_uri, token_endpoint_auth_signing_alg,
    trusted, created_at, metadata_document)
  VALUES (:id, NULL, :name, :redirectUris, :scope, :isPublic, :grantTypes, 0, '', '', NULL, :authMethod, :jwks, :jwksUri, :signingAlg,
    :trusted, :now, :document)
  ON CONFLICT (id) DO NOTHING`;
/**
 * A client assertion's `jti`, stored once per client until the assertion has expired: single use. Hand-written: the
 * one statement that says whether it was new (INSERT ... ON CONFLICT DO NOTHING RETURNING, on both databases).
 */
const USE_JTI = sql`
  INSERT INTO client_assertion_jtis (client_id, jti_hash, expires_at) VALUES (:clientId, :jtiHash, :expiresAt)
  ON CONFLICT (client_id, jti_hash) DO NOTHING
  RETURNING jti_hash`;

/** A TypeORM query builder's SQL and values, in the driver's own form, as a write of the caller's unit of work. */
function sqlOf(builder: { getQueryAndParameters(): [string, unknown[]] }): Write {
  const [text, values] = builder.getQueryAndParameters();
  return { text, values };
}

/** A URL client's row as its metadata document describes it (see ClientMetadataDocuments). */
export type DocumentClientRow = Pick<
  Client,
  | 'id'
  | 'name'
  | 'redirectUris'
  | 'scope'
  | 'isPublic'
  | 'grantTypes'
  | 'tokenEndpointAuthMethod'
  | 'jwks'
  | 'jwksUri'
  | 'tokenEndpointAuthSigningAlg'
  | 'trusted'
  | 'createdAt'
> & { metadataDocument: string };

/** The clients' (and their assertion ids') one way to their tables. */
@Injectable()
export class ClientsRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The tables, in the current unit of work when there is one. */
  private get clients(): Repository<Client> {
    return this.transactions.tx.getRepository(Client);
  }

  private get jtis(): Repository<ClientAssertionJti> {
    return this.transactions.tx.getRepository(ClientAssertionJti);
  }

  /** An event's insert, in the current unit of work. */
  private async audit(event: AuditEvent): Promise<void> {
    const { statement, params } = AuditRepository.insertOf(event);
    await this.db.run(statement, params);
  }

  findById(id: string): Promise<Client | null> {
    return this.clients.findOne({ where: { id } });
  }

  /** A page of the registered clients (not the rows mirroring metadata documents), oldest first, with the total. */
  pageOfRegistered(limit: number, offset: number): Promise<[Client[], number]> {
    return this.clients.findAndCount({
      where: { metadataDocument: IsNull() },
      order: { createdAt: 'ASC', id: 'ASC' },
      take: limit,
      skip: offset,
    });
  }

  /** A new client from its fields (not stored yet). */
  build(fields: Partial<Client>): Client {
    return this.clients.create(fields);
  }

  /** A client's insert, as a write of the caller's unit of work. */
  insertOf(client: Client): Write {
    return sqlOf(this.clients.createQueryBuilder().insert().into(Client).values(client));
  }

  /**
   * The update of one client's columns, as a write of the caller's unit of work; with `scopeWas`, only while its
   * scope is still that (a change computed from the scope read does not overwrite one made since).
   */
  updateOf(clientId: string, changes: Partial<Client>, scopeWas?: string): Write {
    const update = this.clients.createQueryBuilder().update(Client).set(changes).where('id = :id', { id: clientId });
    if (scopeWas !== undefined) update.andWhere('scope = :scopeWas', { scopeWas });
    return sqlOf(update);
  }

  /** A client's deletion (its grants, codes, refresh tokens and consents go with it), as a write of the caller's unit of work. */
  deletionOf(clientId: string): Write {
    return sqlOf(this.clients.createQueryBuilder().delete().from(Client).where('id = :id', { id: clientId }));
  }

  /**
   * A URL client's row: inserted with `created` when there is none, updated with `updated` when its document
   * changed; says which happened.
   */
  mirrorDocument(row: DocumentClientRow, created: AuditEvent, updated: AuditEvent): Promise<{ inserted: boolean; changed: boolean }> {
    return this.transactions.withTransaction(async () => {
      const inserted = (await this.db.run(INSERT_CLIENT, insertParams(row))).affected > 0;
      if (inserted) await this.audit(created);
      // Only a URL client's row, and only when its document is another than the one stored.
      const mirrored = { id: row.id, metadataDocument: And(Not(IsNull()), Not(row.metadataDocument)) };
      const changed = Boolean((await this.clients.update(mirrored, followed(row))).affected);
      if (changed) await this.audit(updated);
      return { inserted, changed };
    });
  }

  /** Stores an assertion's `jti` for the client; false when it was stored already (a replay). */
  async useJti(clientId: string, jtiHash: string, expiresAt: number): Promise<boolean> {
    return (await this.db.run(USE_JTI, { clientId, jtiHash, expiresAt })).rows.length > 0;
  }

  /** Deletes the `jti`s of assertions expired before `now`; returns how many. */
  async deleteExpiredJtis(now: number): Promise<number> {
    return (await this.jtis.delete({ expiresAt: LessThan(now) })).affected ?? 0;
  }
}

/** The columns a changed document rewrites (not the id, creation time or trust). */
function followed(row: DocumentClientRow): Partial<Client> {
  const { name, redirectUris, scope, isPublic, grantTypes, tokenEndpointAuthMethod, jwks, jwksUri, tokenEndpointAuthSigningAlg } = row;
  const document = row.metadataDocument;
  return {
    name,
    redirectUris,
    scope,
    isPublic,
    grantTypes,
    tokenEndpointAuthMethod,
    jwks,
    jwksUri,
    tokenEndpointAuthSigningAlg,
    metadataDocument: document,
  };
}

/** {@link INSERT_CLIENT}'s parameters: the row's columns as the entity's transformers write them. */
function insertParams(row: DocumentClientRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    redirectUris: JSON.stringify(row.redirectUris),
    scope: row.scope,
    isPublic: row.isPublic,
    grantTypes: row.grantTypes.join(' '),
    authMethod: row.tokenEndpointAuthMethod,
    jwks: row.jwks ? JSON.stringify(row.jwks) : null,
    jwksUri: row.jwksUri,
    signingAlg: row.tokenEndpointAuthSigningAlg,
    trusted: row.trusted,
    now: row.createdAt,
    document: row.metadataDocument,
  };
}
