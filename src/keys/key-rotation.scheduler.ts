import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { SigningKeysService } from './signing-keys.service';

/** How often the service checks the rotation schedule; a due key is published within this of its due time. */
const CHECK_INTERVAL_MS = 60 * 60 * 1000;
/** The check's name in the scheduler's registry. */
export const KEY_ROTATION_CHECK = 'signing-keys.rotation-check';

/**
 * Runs the scheduled rotation check in the service (not in the CLI): once at start, then hourly. Each instance
 * runs it; the check itself makes sure that they change the keys once.
 */
@Injectable()
export class KeyRotationScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(KeyRotationScheduler.name);
  private running: Promise<void> | undefined;

  constructor(
    private readonly keys: SigningKeysService,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.runCheck();
    // Not keeping the process alive; the scheduler clears it when the application shuts down.
    this.scheduler.addInterval(KEY_ROTATION_CHECK, setInterval(() => void this.runCheck(), CHECK_INTERVAL_MS).unref());
  }

  /** A check under way finishes before the application has shut down. */
  async onApplicationShutdown(): Promise<void> {
    await this.running;
  }

  /** One check; a failure (the database away, say) is logged and the next check tries again. */
  runCheck(): Promise<void> {
    this.running ??= this.keys
      .checkRotation()
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn(`signing key rotation check failed: ${(error as Error).message}`),
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
