import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { HealthConfig } from './health.config';

/** The instance's way out: from SIGTERM until it exits, readiness answers 503 so that load balancers stop sending. */
@Injectable()
export class ShutdownDrain {
  private readonly logger = new Logger('Shutdown');
  private draining = false;

  constructor(private readonly config: HealthConfig) {}

  /** Whether a shutdown has begun. */
  get active(): boolean {
    return this.draining;
  }

  /**
   * Marks the instance as leaving, then waits SHUTDOWN_DRAIN_SECONDS (still serving) before the caller closes it.
   * A deploy does this on every instance, so it says so in one line at info, and its 503s are not logged at all.
   */
  async begin(signal: string): Promise<void> {
    this.draining = true;
    const seconds = this.config.shutdownDrainSeconds;
    this.logger.log(
      seconds > 0
        ? `${signal} received: draining for ${seconds} s (/health/ready answers 503, requests are still served), then shutting down`
        : `${signal} received, shutting down`,
    );
    if (seconds > 0) await sleep(seconds * 1_000);
  }
}
