import { Injectable } from '@nestjs/common';
import { SqlRunner, expiredRowsDeletion, sql } from '../../database/sql';

const INSERT = sql`
  INSERT INTO pushed_requests (id, client_id, params, expires_at, used_at) VALUES (:id, :clientId, :params, :expiresAt, NULL)`;
const FIND = sql`
  SELECT client_id, params FROM pushed_requests WHERE id = :id AND expires_at > :now AND used_at IS NULL`;
/** The one answer a pushed request yields: whoever marks it first. */
const USE = sql`UPDATE pushed_requests SET used_at = :now WHERE id = :id AND used_at IS NULL AND expires_at > :now`;
const REPLACE_PARAMS = sql`UPDATE pushed_requests SET params = :params WHERE id = :id AND used_at IS NULL`;
/** Planned at each run with its cutoff (as the retention job's other deletes; see RetentionRepository). */
const DELETE_EXPIRED = expiredRowsDeletion('pushed_requests');

/** The pushed authorization requests' one way to their table. */
@Injectable()
export class PushedRequestsRepository {
  constructor(private readonly db: SqlRunner) {}

  async insert(id: string, clientId: string, params: string, expiresAt: number): Promise<void> {
    await this.db.run(INSERT, { id, clientId, params, expiresAt });
  }

  async find(id: string, now: number): Promise<{ clientId: string; params: string } | undefined> {
    const row = await this.db.one<{ client_id: string; params: string }>(FIND, { id, now });
    return row && { clientId: row.client_id, params: row.params };
  }

  async use(id: string, now: number): Promise<boolean> {
    return (await this.db.run(USE, { id, now })).affected > 0;
  }

  async replaceParams(id: string, params: string): Promise<void> {
    await this.db.run(REPLACE_PARAMS, { id, params });
  }

  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
