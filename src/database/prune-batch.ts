import type { ObjectLiteral, Repository } from 'typeorm';

/**
 * A prune step's batch (see retention-step.ts): deletes up to `batch` rows of the repository's table whose `column`
 * (epoch ms, indexed) is before `cutoff`, chosen by their `key`, in one statement planned at each run (the cutoff
 * moves): `DELETE … WHERE key IN (SELECT key … WHERE column < :cutoff LIMIT n)`. Returns how many.
 */
export async function deleteBatchBefore<T extends ObjectLiteral>(
  rows: Repository<T>,
  key: string,
  column: string,
  cutoff: number,
  batch: number,
): Promise<number> {
  const chosen = rows.createQueryBuilder('chosen').select(`chosen.${key}`).where(`chosen.${column} < :cutoff`).limit(batch);
  const deleted = await rows.createQueryBuilder().delete().where(`${key} IN (${chosen.getQuery()})`, { cutoff }).execute();
  return deleted.affected ?? 0;
}
