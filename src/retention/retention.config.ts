import { type Env, wholeSeconds } from '../config/env';

export class RetentionConfig {
  static readonly variables = ['PRUNE_INTERVAL_SECONDS'] as const;
  /** How often one instance deletes what nothing can use any more (see RetentionService); 0: never. */
  readonly pruneIntervalSeconds: number;

  constructor(env: Env) {
    this.pruneIntervalSeconds = wholeSeconds(env, 'PRUNE_INTERVAL_SECONDS', 600, 0);
  }
}
