import { type Env, wholeSeconds } from '../config/env';

export class HealthConfig {
  static readonly variables = ['SHUTDOWN_DRAIN_SECONDS'] as const;
  /**
   * After SIGTERM, how long the instance keeps serving with `/health/ready` at 503 before it closes its port: long
   * enough for a load balancer's probes to take it out of rotation (0: close at once).
   */
  readonly shutdownDrainSeconds: number;

  constructor(env: Env) {
    this.shutdownDrainSeconds = wholeSeconds(env, 'SHUTDOWN_DRAIN_SECONDS', 0, 0);
  }
}
