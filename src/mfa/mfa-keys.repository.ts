import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import { MfaKey } from './mfa-key.entity';
import { RecoveryCode } from './recovery-code.entity';

/** The second-factor module's own keys (`mfa_keys`, sealed), and the keying of recovery codes stored before them. */
@Injectable()
export class MfaKeysRepository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The tables, in the current unit of work when there is one. */
  private get keys(): Repository<MfaKey> {
    return this.transactions.tx.getRepository(MfaKey);
  }

  private get recoveryCodes(): Repository<RecoveryCode> {
    return this.transactions.tx.getRepository(RecoveryCode);
  }

  /** The stored (sealed) key named `name`: `sealed` stored first when there is none yet. */
  async findOrCreate(name: string, sealed: string, now: number): Promise<string> {
    // The first instance to start stores the key (ON CONFLICT DO NOTHING); the others find it there.
    await this.keys.createQueryBuilder().insert().values({ name, secret: sealed, createdAt: now }).orIgnore().execute();
    return (await this.find(name))!;
  }

  async find(name: string): Promise<string | undefined> {
    return (await this.keys.findOne({ select: { secret: true }, where: { name } }))?.secret;
  }

  /** Stores `sealed` in place of `was`; false when the row changed meanwhile. */
  async reseal(name: string, was: string, sealed: string): Promise<boolean> {
    return Boolean((await this.keys.update({ name, secret: was }, { secret: sealed })).affected);
  }

  /** Rewrites every unkeyed recovery-code hash as `keyed` of it, `batch` at a time; how many this instance did. */
  async keyRecoveryCodes(keyed: (unkeyed: string) => string, batch = 500): Promise<number> {
    let done = 0;
    for (;;) {
      // Stored before their hashes were keyed: SHA-256 as 64 hex digits (a keyed hash has 43 characters).
      const rows = await this.recoveryCodes
        .createQueryBuilder('r')
        .select('r.code_hash', 'code_hash')
        .where('LENGTH(r.code_hash) = 64')
        .limit(batch)
        .getRawMany<{ code_hash: string }>();
      for (const { code_hash: was } of rows) {
        done += (await this.recoveryCodes.update({ codeHash: was }, { codeHash: keyed(was) })).affected ?? 0;
      }
      if (rows.length < batch) return done;
    }
  }
}
