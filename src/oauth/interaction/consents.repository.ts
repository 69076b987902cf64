import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, type StatementWrite, sql } from '../../database/sql';
import { Client } from '../entities/client.entity';
import { Consent } from '../entities/consent.entity';

// Read on every authorization of a client the person consented to (a hot path test/e2e/statement-count counts).
const FIND_CONSENT = sql`SELECT scope FROM consents WHERE user_id = :userId AND client_id = :clientId`;
// Hand-written: whether ON CONFLICT DO NOTHING inserted is its affected-row count, which TypeORM's InsertResult lacks on SQLite.
const INSERT_CONSENT = sql`
  INSERT INTO consents (user_id, client_id, scope, updated_at) VALUES (:userId, :clientId, :scope, :now)
  ON CONFLICT (user_id, client_id) DO NOTHING`;
// A write of the grants repository's unit (GrantsRepository.writeWith takes statements).
const DELETE_CONSENT = sql`DELETE FROM consents WHERE user_id = :userId AND client_id = :clientId`;

/** A consent as the connected-apps page lists it. */
export interface ConsentRecord {
  clientId: string;
  clientName: string;
  scope: string;
  updatedAt: number;
}

/** The consents' one way to their table: one row per person and client. */
@Injectable()
export class ConsentsRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The table, in the current unit of work when there is one. */
  private get consents(): Repository<Consent> {
    return this.transactions.tx.getRepository(Consent);
  }

  /** The scope the person has granted the client (space-separated), if any. */
  async scopeOf(userId: string, clientId: string): Promise<string | undefined> {
    return (await this.db.one<{ scope: string }>(FIND_CONSENT, { userId, clientId }))?.scope;
  }

  /**
   * Sets the consent to `scope` if it is still `previous` (undefined: there was none), with its event; false (and
   * no event) when another request changed it in between.
   */
  replace(userId: string, clientId: string, previous: string | undefined, scope: string, event: AuditEvent): Promise<boolean> {
    return this.transactions.withTransaction(async () => {
      // One conditional statement each: the affected-row count says whether another request came between.
      const changed =
        previous === undefined
          ? (await this.db.run(INSERT_CONSENT, { userId, clientId, scope, now: event.at })).affected
          : ((await this.consents.update({ userId, clientId, scope: previous }, { scope, updatedAt: event.at })).affected ?? 0);
      if (!changed) return false;
      const { statement, params } = AuditRepository.insertOf(event);
      await this.db.run(statement, params);
      return true;
    });
  }

  /** A person's consents, with their clients' names. */
  async allOf(userId: string): Promise<ConsentRecord[]> {
    const { entities, raw } = await this.consents
      .createQueryBuilder('co')
      .innerJoin(Client, 'c', 'c.id = co.client_id')
      .addSelect('c.name', 'client_name')
      .where('co.user_id = :userId', { userId })
      .getRawAndEntities<{ client_name: string }>();
    // One row per consent (its key is the pair), so the entities come in the rows' order.
    return entities.map((consent, i) => ({
      clientId: consent.clientId,
      clientName: raw[i].client_name,
      scope: consent.scope,
      updatedAt: consent.updatedAt,
    }));
  }

  /** A consent's deletion, as a write of the caller's unit of work. */
  static deletionOf(userId: string, clientId: string): StatementWrite {
    return { statement: DELETE_CONSENT, params: { userId, clientId } };
  }
}
