import { DiscoveryService } from '@nestjs/core';

/** One table's pruning, run a batch at a time by the retention job. */
export interface PruneStep {
  /** The table, as `pruned_rows_total{table}` names it. */
  readonly table: string;
  /** Deletes up to `batch` of its rows that nothing can use any more at `now` (epoch ms); returns how many. */
  deleteBatch(now: number, batch: number): Promise<number>;
}

/** What a module contributes to retention: the prune steps of its own tables, in the order they run. */
export interface PruneSteps {
  pruneSteps(): readonly PruneStep[];
}

/**
 * Marks a provider that implements {@link PruneSteps}. The retention job finds every provider so marked, in whatever
 * module provides it, so a module with expiring rows adds one provider of its own and touches no other module.
 */
export const ExpiringRows = DiscoveryService.createDecorator<void>();
