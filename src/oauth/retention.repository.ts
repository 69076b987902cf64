import { Injectable } from '@nestjs/common';
import { SqlRunner, Statement } from '../database/sql';

/** What a step's cutoff is: now, or the end of the life of the last access token of a grant ended now. */
export type PruneCutoff = 'now' | 'grant';

/**
 * Each statement deletes up to `:batch` rows (by key, through an index on what decides) of one table, planned at
 * each run with its cutoff (a prepared plan made while the tables were small would read them whole).
 */
const pruned = (source: string) => new Statement(source, { unprepared: true });

/**
 * What nothing can use any more, in the order it is deleted (children before their grants): each entry a table (as
 * the metric names it) and the statement that deletes a batch of its rows older than `:cutoff`.
 */
const STEPS: { table: string; statement: Statement; cutoff: PruneCutoff }[] = [
  // Codes never redeemed, once expired. A redeemed code stays with its grant (deleted below): a replay of it is
  // recognised, and revokes the grant, as long as the grant lives.
  {
    table: 'authorization_codes',
    cutoff: 'now',
    statement: pruned(`DELETE FROM authorization_codes WHERE code_hash IN (
      SELECT code_hash FROM authorization_codes WHERE expires_at < :cutoff AND consumed_at IS NULL LIMIT :batch)`),
  },
  // The refresh tokens (rotated ones included, kept for reuse detection while the grant lives) of ended grants.
  {
    table: 'refresh_tokens',
    cutoff: 'grant',
    statement: pruned(`DELETE FROM refresh_tokens WHERE token_hash IN (
      SELECT r.token_hash FROM grants g JOIN refresh_tokens r ON r.grant_id = g.id WHERE g.expires_at < :cutoff LIMIT :batch)`),
  },
  {
    table: 'authorization_codes',
    cutoff: 'grant',
    statement: pruned(`DELETE FROM authorization_codes WHERE code_hash IN (
      SELECT c.code_hash FROM grants g JOIN authorization_codes c ON c.grant_id = g.id WHERE g.expires_at < :cutoff LIMIT :batch)`),
  },
  // A grant once it has ended and its last access token has expired (nothing refers to it then).
  {
    table: 'grants',
    cutoff: 'grant',
    statement: pruned(`DELETE FROM grants WHERE id IN (SELECT id FROM grants WHERE expires_at < :cutoff LIMIT :batch)`),
  },
  {
    table: 'sessions',
    cutoff: 'now',
    statement: pruned(`DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < :cutoff LIMIT :batch)`),
  },
  {
    table: 'client_assertion_jtis',
    cutoff: 'now',
    statement: pruned(`DELETE FROM client_assertion_jtis WHERE (client_id, jti_hash) IN (
      SELECT client_id, jti_hash FROM client_assertion_jtis WHERE expires_at < :cutoff LIMIT :batch)`),
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
  constructor(private readonly db: SqlRunner) {}

  /** The steps, in the order they run (children before their grants). */
  steps(): CutoffStep[] {
    return STEPS.map(({ table, statement, cutoff }) => ({
      table,
      cutoff,
      deleteBatch: async (at: number, batch: number) => (await this.db.run(statement, { cutoff: at, batch })).affected,
    }));
  }
}
