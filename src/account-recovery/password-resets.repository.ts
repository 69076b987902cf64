import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { IsNull, MoreThan, type Repository } from 'typeorm';
import { PasswordReset } from './password-reset.entity';
import { deleteBatchBefore } from '../database/prune-batch';

/** The password resets' one way to their table. */
@Injectable()
export class PasswordResetsRepository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The table, in the current unit of work when there is one. */
  private get rows(): Repository<PasswordReset> {
    return this.transactions.tx.getRepository(PasswordReset);
  }

  async insert(tokenHash: string, userId: string, now: number, expiresAt: number): Promise<void> {
    await this.rows.insert({ tokenHash, userId, createdAt: now, expiresAt, usedAt: null });
  }

  /** The person of a live, unused reset. */
  async find(tokenHash: string, now: number): Promise<string | undefined> {
    const row = await this.rows.findOne({ select: { userId: true }, where: { tokenHash, usedAt: IsNull(), expiresAt: MoreThan(now) } });
    return row?.userId;
  }

  /** Uses a live reset, once across requests and instances (one conditional UPDATE); false when it is not live. */
  async use(tokenHash: string, now: number): Promise<boolean> {
    return Boolean((await this.rows.update({ tokenHash, usedAt: IsNull(), expiresAt: MoreThan(now) }, { usedAt: now })).affected);
  }

  /** Every other reset of the person stops working (one was used, or the password changed another way). */
  async endAll(userId: string, now: number): Promise<void> {
    await this.rows.update({ userId, usedAt: IsNull() }, { usedAt: now });
  }

  /** Deletes up to `batch` resets expired before `cutoff` (one statement, as the retention job's other deletes). */
  async deleteExpired(cutoff: number, batch: number): Promise<number> {
    return deleteBatchBefore(this.rows, 'token_hash', 'expires_at', cutoff, batch);
  }
}
