import { Injectable } from '@nestjs/common';
import { SqlRunner, epochMs, expiredRowsDeletion, sql } from '../../database/sql';

const INSERT = sql`
  INSERT INTO pushed_requests (id, client_id, params, expires_at, used_at) VALUES (:id, :clientId, :params, :expiresAt, NULL)`;
const FIND = sql`
  SELECT client_id, params, login_after FROM pushed_requests WHERE id = :id AND expires_at > :now AND used_at IS NULL`;
/** The one answer a pushed request yields: whoever marks it first. */
const USE = sql`UPDATE pushed_requests SET used_at = :now WHERE id = :id AND used_at IS NULL AND expires_at > :now`;
/** The login the request asked for is asked: its parameters without it, and only a login after `loginAfter` answers. */
const SETTLE = sql`UPDATE pushed_requests SET params = :params, login_after = :loginAfter WHERE id = :id AND used_at IS NULL`;
/** Planned at each run with its cutoff (as the retention job's other deletes; see RetentionRepository). */
const DELETE_EXPIRED = expiredRowsDeletion('pushed_requests');

/** The pushed authorization requests' one way to their table. */
@Injectable()
export class PushedRequestsRepository {
  constructor(private readonly db: SqlRunner) {}

  async insert(id: string, clientId: string, params: string, expiresAt: number): Promise<void> {
    await this.db.run(INSERT, { id, clientId, params, expiresAt });
  }

  async find(id: string, now: number): Promise<{ clientId: string; params: string; loginAfter: number | null } | undefined> {
    const row = await this.db.one<{ client_id: string; params: string; login_after: string | number | null }>(FIND, { id, now });
    return row && { clientId: row.client_id, params: row.params, loginAfter: epochMs(row.login_after, true) };
  }

  async use(id: string, now: number): Promise<boolean> {
    return (await this.db.run(USE, { id, now })).affected > 0;
  }

  async settle(id: string, params: string, loginAfter: number): Promise<void> {
    await this.db.run(SETTLE, { id, params, loginAfter });
  }

  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return (await this.db.run(DELETE_EXPIRED, { cutoff, batch })).affected;
  }
}
