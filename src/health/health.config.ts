import { type Env, wholeSeconds } from '../config/env';

/** SHUTDOWN_DRAIN_SECONDS when unset in production: a balancer probing every second or two sees the 503 first. */
const PRODUCTION_DRAIN_SECONDS = 5;

export class HealthConfig {
  static readonly variables = ['SHUTDOWN_DRAIN_SECONDS'] as const;
  /**
   * After SIGTERM, how long the instance keeps serving with `/health/ready` at 503 before it closes its port: long
   * enough for a load balancer's probes to take it out of rotation (0: close at once). By default
   * {@link PRODUCTION_DRAIN_SECONDS} with `NODE_ENV=production`, 0 otherwise (a developer's Ctrl-C stops at once).
   */
  readonly shutdownDrainSeconds: number;

  constructor(env: Env) {
    const fallback = env.NODE_ENV === 'production' ? PRODUCTION_DRAIN_SECONDS : 0;
    this.shutdownDrainSeconds = wholeSeconds(env, 'SHUTDOWN_DRAIN_SECONDS', fallback, 0);
  }
}
