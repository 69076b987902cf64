import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { HealthConfig } from './health.config';

/** The instance's way out: from SIGTERM until it exits, readiness answers 503 so that load balancers stop sending. */
@Injectable()
export class ShutdownDrain {
  private draining = false;

  constructor(private readonly config: HealthConfig) {}

  /** Whether a shutdown has begun. */
  get active(): boolean {
    return this.draining;
  }

  /** Marks the instance as leaving, then waits SHUTDOWN_DRAIN_SECONDS (still serving) before the caller closes it. */
  async begin(): Promise<void> {
    this.draining = true;
    if (this.config.shutdownDrainSeconds > 0) await sleep(this.config.shutdownDrainSeconds * 1_000);
  }
}
