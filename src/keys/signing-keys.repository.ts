import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../audit/audit-event.entity';
import { AuditRepository } from '../audit/audit.repository';
import { SqlRunner } from '../database/sql';
import type { KeyAction, KeyTimeline } from './key-lifecycle';
import { SigningKey } from './signing-key.entity';

/** The PostgreSQL advisory lock key of changes to the signing keys (an arbitrary constant: "oauthkey"). */
const KEYS_LOCK_KEY = '6f617574686b6579';

/** A key made and sealed, not stored yet. */
export type MadeKey = Pick<SigningKey, 'kid' | 'privateJwk' | 'publicJwk' | 'createdAt'>;

/** The keys module's one way to its table. */
@Injectable()
export class SigningKeysRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The table, in the current unit of work when there is one. */
  private get keys(): Repository<SigningKey> {
    return this.transactions.tx.getRepository(SigningKey);
  }

  /** Every key, newest activation first. */
  all(): Promise<SigningKey[]> {
    return this.keys.find({ order: { activatesAt: 'DESC', kid: 'ASC' } });
  }

  /** Every key's timeline (no key material). */
  timelines(): Promise<KeyTimeline[]> {
    return this.keys.find({ select: { kid: true, activatesAt: true, retiresAt: true, unpublishesAt: true, state: true } });
  }

  /** Every key's id and sealed private key. */
  sealedPrivateKeys(): Promise<Pick<SigningKey, 'kid' | 'privateJwk'>[]> {
    return this.keys.find({ select: { kid: true, privateJwk: true } });
  }

  /**
   * Reads the keys' timelines and carries out what `decide` makes of them, with their audit events, in one unit of
   * work under the keys' write lock (SqlRunner.locked): no other instance does the same in between. `made` is the key a `publish` stores.
   */
  change(decide: (keys: KeyTimeline[]) => { actions: KeyAction[]; events: AuditEvent[] }, made?: MadeKey): Promise<KeyAction[]> {
    return this.db.locked(KEYS_LOCK_KEY, async () => {
      const { actions, events } = decide(await this.timelines());
      for (const action of actions) await this.carryOut(action, made);
      for (const event of events) {
        const { statement, params } = AuditRepository.insertOf(event);
        await this.db.run(statement, params);
      }
      return actions;
    });
  }

  /** The write that carries out an action; `made` is the new key a `publish` stores. */
  private async carryOut(action: KeyAction, made: MadeKey | undefined): Promise<void> {
    switch (action.type) {
      case 'publish':
        if (!made || made.kid !== action.kid) throw new Error(`no key was made for "${action.kid}"`);
        await this.keys.insert({ ...made, activatesAt: action.activatesAt, retiresAt: null, unpublishesAt: null, state: 'published' });
        return;
      case 'schedule-retirement':
        await this.keys.update({ kid: action.kid }, { retiresAt: action.retiresAt, unpublishesAt: action.unpublishesAt });
        return;
      case 'activate':
        await this.keys.update({ kid: action.kid }, { state: 'active' });
        return;
      case 'retire':
        await this.keys.update({ kid: action.kid }, { state: 'retired' });
        return;
      case 'remove':
        await this.keys.delete({ kid: action.kid });
        return;
    }
  }

  /**
   * In one transaction: every key's private key given to `reseal`, which returns it sealed anew, or undefined to
   * leave it. Returns how many were resealed and how many keys there are.
   */
  resealAll(reseal: (kid: string, privateJwk: string) => string | undefined): Promise<{ resealed: number; total: number }> {
    return this.transactions.withTransaction(async () => {
      const rows = await this.keys.find();
      let resealed = 0;
      for (const row of rows) {
        const sealed = reseal(row.kid, row.privateJwk);
        if (sealed === undefined) continue;
        await this.keys.update({ kid: row.kid }, { privateJwk: sealed });
        resealed++;
      }
      return { resealed, total: rows.length };
    });
  }
}
