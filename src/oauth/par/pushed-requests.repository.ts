import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull, MoreThan, type Repository } from 'typeorm';
import { PushedRequest } from '../entities/pushed-request.entity';
import { deleteBatchBefore } from '../../database/prune-batch';

/** The pushed authorization requests' one way to their table. */
@Injectable()
export class PushedRequestsRepository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The table, in the current unit of work when there is one. */
  private get rows(): Repository<PushedRequest> {
    return this.transactions.tx.getRepository(PushedRequest);
  }

  async insert(id: string, clientId: string, params: string, expiresAt: number): Promise<void> {
    await this.rows.insert({ id, clientId, params, expiresAt, usedAt: null });
  }

  /** The live, unused request of this id. */
  async find(id: string, now: number): Promise<{ clientId: string; params: string; loginAfter: number | null } | undefined> {
    const row = await this.rows.findOne({
      select: { clientId: true, params: true, loginAfter: true },
      where: { id, expiresAt: MoreThan(now), usedAt: IsNull() },
    });
    return row ? { clientId: row.clientId, params: row.params, loginAfter: row.loginAfter ?? null } : undefined;
  }

  /** The one answer a pushed request yields: whoever marks it first (one conditional UPDATE). */
  async use(id: string, now: number): Promise<boolean> {
    return Boolean((await this.rows.update({ id, usedAt: IsNull(), expiresAt: MoreThan(now) }, { usedAt: now })).affected);
  }

  /** The login the request asked for is asked: its parameters without it, and only a login after `loginAfter` answers. */
  async settle(id: string, params: string, loginAfter: number): Promise<void> {
    await this.rows.update({ id, usedAt: IsNull() }, { params, loginAfter });
  }

  /** Deletes up to `batch` requests expired before `cutoff` (one statement, as the retention job's other deletes). */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.rows, 'id', 'expires_at', cutoff, batch);
  }
}
