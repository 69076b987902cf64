import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../audit/audit-event.entity';
import { AuditRepository } from '../audit/audit.repository';
import { lockedReadWrite } from '../database/locked-write';
import { SqlRunner, type StatementWrite, epochMs, sql } from '../database/sql';
import type { KeyAction, KeyState, KeyTimeline } from './key-lifecycle';
import { SigningKey } from './signing-key.entity';

/** The PostgreSQL advisory lock key of changes to the signing keys (an arbitrary constant: "oauthkey"). */
const KEYS_LOCK_KEY = '6f617574686b6579';

/** A key made and sealed, not stored yet. */
export type MadeKey = Pick<SigningKey, 'kid' | 'privateJwk' | 'publicJwk' | 'createdAt'>;

const READ_TIMELINES = sql`SELECT kid, activates_at, retires_at, unpublishes_at, state FROM signing_keys`;
const INSERT_KEY = sql`
  INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at, activates_at, retires_at, unpublishes_at, state)
  VALUES (:kid, :privateJwk, :publicJwk, :createdAt, :activatesAt, NULL, NULL, 'published')`;
const SCHEDULE_RETIREMENT = sql`UPDATE signing_keys SET retires_at = :retiresAt, unpublishes_at = :unpublishesAt WHERE kid = :kid`;
const RECORD_STATE = sql`UPDATE signing_keys SET state = :state WHERE kid = :kid`;
const DELETE_KEY = sql`DELETE FROM signing_keys WHERE kid = :kid`;

interface TimelineRow {
  kid: string;
  activates_at: unknown;
  retires_at: unknown;
  unpublishes_at: unknown;
  state: KeyState;
}

function timeline(row: TimelineRow): KeyTimeline {
  return {
    kid: row.kid,
    activatesAt: epochMs(row.activates_at),
    retiresAt: epochMs(row.retires_at, true),
    unpublishesAt: epochMs(row.unpublishes_at, true),
    state: row.state,
  };
}

/** The statement that carries out an action; `made` is the new key a `publish` stores. */
function write(action: KeyAction, made: MadeKey | undefined): StatementWrite {
  switch (action.type) {
    case 'publish':
      if (!made || made.kid !== action.kid) throw new Error(`no key was made for "${action.kid}"`);
      return { statement: INSERT_KEY, params: { ...made, activatesAt: action.activatesAt } };
    case 'schedule-retirement':
      return {
        statement: SCHEDULE_RETIREMENT,
        params: { kid: action.kid, retiresAt: action.retiresAt, unpublishesAt: action.unpublishesAt },
      };
    case 'activate':
      return { statement: RECORD_STATE, params: { kid: action.kid, state: 'active' } };
    case 'retire':
      return { statement: RECORD_STATE, params: { kid: action.kid, state: 'retired' } };
    case 'remove':
      return { statement: DELETE_KEY, params: { kid: action.kid } };
  }
}

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
   * Reads the keys' timelines and carries out what `decide` makes of them, with their audit events, with no other
   * instance doing the same in between (see lockedReadWrite). `made` is the key a `publish` stores.
   */
  change(decide: (keys: KeyTimeline[]) => { actions: KeyAction[]; events: AuditEvent[] }, made?: MadeKey): Promise<KeyAction[]> {
    return lockedReadWrite<TimelineRow, KeyAction[]>(this.db, KEYS_LOCK_KEY, READ_TIMELINES, (rows) => {
      const { actions, events } = decide(rows.map(timeline));
      const writes = [...actions.map((action) => write(action, made)), ...events.map((event) => AuditRepository.insertOf(event))];
      return { writes, result: actions };
    });
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
