import { Injectable } from '@nestjs/common';
import { SqlRunner, sql } from '../database/sql';

/** The first instance to start stores the key; the others find it there. */
const INSERT_KEY = sql`INSERT INTO mfa_keys (name, secret, created_at) VALUES (:name, :secret, :now) ON CONFLICT (name) DO NOTHING`;
const FIND_KEY = sql`SELECT secret FROM mfa_keys WHERE name = :name`;
/** Replaces a key's sealed form by the same key sealed anew, unless the row changed since it was read. */
const RESEAL_KEY = sql`UPDATE mfa_keys SET secret = :sealed WHERE name = :name AND secret = :was`;
/** Recovery codes stored before their hashes were keyed: SHA-256 as 64 hex digits (a keyed hash has 43 characters). */
const UNKEYED_RECOVERY_CODES = sql`SELECT code_hash FROM recovery_codes WHERE LENGTH(code_hash) = 64 LIMIT :batch`;
const KEY_RECOVERY_CODE = sql`UPDATE recovery_codes SET code_hash = :keyed WHERE code_hash = :was`;

/** The second-factor module's own keys (`mfa_keys`, sealed), and the keying of recovery codes stored before them. */
@Injectable()
export class MfaKeysRepository {
  constructor(private readonly db: SqlRunner) {}

  /** The stored (sealed) key named `name`: `sealed` stored first when there is none yet. */
  async findOrCreate(name: string, sealed: string, now: number): Promise<string> {
    await this.db.run(INSERT_KEY, { name, secret: sealed, now });
    return (await this.find(name))!;
  }

  async find(name: string): Promise<string | undefined> {
    return (await this.db.one<{ secret: string }>(FIND_KEY, { name }))?.secret;
  }

  /** Stores `sealed` in place of `was`; false when the row changed meanwhile. */
  async reseal(name: string, was: string, sealed: string): Promise<boolean> {
    return (await this.db.run(RESEAL_KEY, { name, was, sealed })).affected > 0;
  }

  /** Rewrites every unkeyed recovery-code hash as `keyed` of it, `batch` at a time; how many this instance did. */
  async keyRecoveryCodes(keyed: (unkeyed: string) => string, batch = 500): Promise<number> {
    let done = 0;
    for (;;) {
      const rows = (await this.db.run<{ code_hash: string }>(UNKEYED_RECOVERY_CODES, { batch })).rows;
      for (const { code_hash: was } of rows) done += (await this.db.run(KEY_RECOVERY_CODE, { was, keyed: keyed(was) })).affected;
      if (rows.length < batch) return done;
    }
  }
}
