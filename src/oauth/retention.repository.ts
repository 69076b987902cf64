import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { EntityManager, EntityTarget, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { AuthorizationCode } from './entities/authorization-code.entity';
import { ClientAssertionJti } from './entities/client-assertion-jti.entity';
import { Grant } from './entities/grant.entity';
import { RefreshToken } from './entities/refresh-token.entity';
import { Session } from './entities/session.entity';

/** What a step's cutoff is: now, or the end of the life of the last access token of a grant ended now. */
export type PruneCutoff = 'now' | 'grant';

/**
 * One table's deletion: the rows whose `key` (columns) a query finds past `:cutoff` (through an index on what
 * decides), a batch at a time. Built by TypeORM's query builder and run unprepared, so each run is planned with its
 * cutoff (a plan made while the tables were small would read them whole).
 */
interface Step {
  table: string;
  cutoff: PruneCutoff;
  entity: EntityTarget<ObjectLiteral>;
  key: string;
  expired: (tx: EntityManager) => SelectQueryBuilder<ObjectLiteral>;
}

/** What nothing can use any more, in the order it is deleted (children before their grants). */
const STEPS: Step[] = [
  // Codes never redeemed, once expired. A redeemed code stays with its grant (deleted below): a replay of it is
  // recognised, and revokes the grant, as long as the grant lives.
  {
    table: 'authorization_codes',
    cutoff: 'now',
    entity: AuthorizationCode,
    key: 'code_hash',
    expired: (tx) =>
      tx
        .getRepository(AuthorizationCode)
        .createQueryBuilder('c')
        .select('c.codeHash')
        .where('c.expiresAt < :cutoff AND c.consumedAt IS NULL'),
  },
  // The refresh tokens (rotated ones included, kept for reuse detection while the grant lives) of ended grants.
  {
    table: 'refresh_tokens',
    cutoff: 'grant',
    entity: RefreshToken,
    key: 'token_hash',
    expired: (tx) =>
      tx
        .getRepository(Grant)
        .createQueryBuilder('g')
        .innerJoin(RefreshToken, 'r', 'r.grantId = g.id')
        .select('r.tokenHash')
        .where('g.expiresAt < :cutoff'),
  },
  {
    table: 'authorization_codes',
    cutoff: 'grant',
    entity: AuthorizationCode,
    key: 'code_hash',
    expired: (tx) =>
      tx
        .getRepository(Grant)
        .createQueryBuilder('g')
        .innerJoin(AuthorizationCode, 'c', 'c.grantId = g.id')
        .select('c.codeHash')
        .where('g.expiresAt < :cutoff'),
  },
  // A grant once it has ended and its last access token has expired (nothing refers to it then).
  {
    table: 'grants',
    cutoff: 'grant',
    entity: Grant,
    key: 'id',
    expired: (tx) => tx.getRepository(Grant).createQueryBuilder('g').select('g.id').where('g.expiresAt < :cutoff'),
  },
  {
    table: 'sessions',
    cutoff: 'now',
    entity: Session,
    key: 'id',
    expired: (tx) => tx.getRepository(Session).createQueryBuilder('s').select('s.id').where('s.expiresAt < :cutoff'),
  },
  {
    table: 'client_assertion_jtis',
    cutoff: 'now',
    entity: ClientAssertionJti,
    key: '(client_id, jti_hash)',
    expired: (tx) =>
      tx.getRepository(ClientAssertionJti).createQueryBuilder('j').select(['j.clientId', 'j.jtiHash']).where('j.expiresAt < :cutoff'),
  },
];

/** One table's deletion: up to `batch` of its rows past `cutoff` (of the kind the step names), returns how many. */
export interface CutoffStep {
  table: string;
  cutoff: PruneCutoff;
  deleteBatch(cutoff: number, batch: number): Promise<number>;
}

/** The authorization server's rows that nothing can use any more, deleted a batch at a time (see OAuthRetention). */
@Injectable()
export class RetentionRepository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The steps, in the order they run (children before their grants). */
  steps(): CutoffStep[] {
    return STEPS.map(({ table, cutoff, entity, key, expired }) => ({
      table,
      cutoff,
      deleteBatch: async (at: number, batch: number) => {
        const tx = this.transactions.tx;
        const rows = expired(tx).limit(batch).getQuery();
        const deleted = await tx.getRepository(entity).createQueryBuilder().delete().where(`${key} IN (${rows})`, { cutoff: at }).execute();
        return deleted.affected ?? 0;
      },
    }));
  }
}
