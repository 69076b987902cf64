import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { AuditRepository } from '../../audit/audit.repository';
import { SqlRunner, type StatementWrite, epochMs, sql } from '../../database/sql';

const FIND_CONSENT = sql`SELECT scope FROM consents WHERE user_id = :userId AND client_id = :clientId`;
const INSERT_CONSENT = sql`
  INSERT INTO consents (user_id, client_id, scope, updated_at) VALUES (:userId, :clientId, :scope, :now)
  ON CONFLICT (user_id, client_id) DO NOTHING`;
/** Grows the consent only if it is still what was read: the affected-row count says whether another request came between. */
const GROW_CONSENT = sql`
  UPDATE consents SET scope = :scope, updated_at = :now WHERE user_id = :userId AND client_id = :clientId AND scope = :previous`;

const CONSENTS = sql`
  SELECT co.client_id, c.name, co.scope, co.updated_at
  FROM consents co JOIN clients c ON c.id = co.client_id
  WHERE co.user_id = :userId`;
const DELETE_CONSENT = sql`DELETE FROM consents WHERE user_id = :userId AND client_id = :clientId`;

interface ConsentRow {
  client_id: string;
  name: string;
  scope: string;
  updated_at: string | number;
}

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
  constructor(private readonly db: SqlRunner) {}

  /** The scope the person has granted the client (space-separated), if any. */
  async scopeOf(userId: string, clientId: string): Promise<string | undefined> {
    return (await this.db.one<{ scope: string }>(FIND_CONSENT, { userId, clientId }))?.scope;
  }

  /**
   * Sets the consent to `scope` if it is still `previous` (undefined: there was none), with its event; false (and
   * no event) when another request changed it in between.
   */
  async replace(userId: string, clientId: string, previous: string | undefined, scope: string, event: AuditEvent): Promise<boolean> {
    const params = { userId, clientId, scope, previous: previous ?? null, now: event.at };
    const [changed] = await this.db.atomic([
      { statement: previous === undefined ? INSERT_CONSENT : GROW_CONSENT, params },
      AuditRepository.insertOf(event, { onlyIfChanged: true }),
    ]);
    return changed > 0;
  }

  /** A person's consents, with their clients' names. */
  async allOf(userId: string): Promise<ConsentRecord[]> {
    const { rows } = await this.db.run<ConsentRow>(CONSENTS, { userId });
    return rows.map((row) => ({ clientId: row.client_id, clientName: row.name, scope: row.scope, updatedAt: epochMs(row.updated_at) }));
  }

  /** A consent's deletion, as a write of the caller's unit of work. */
  static deletionOf(userId: string, clientId: string): StatementWrite {
    return { statement: DELETE_CONSENT, params: { userId, clientId } };
  }
}
