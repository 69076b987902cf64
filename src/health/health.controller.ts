import { ApiProblems } from '../common/openapi';
import { Controller, Get, Inject, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheck, type HealthCheckResult, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ThrottlerStorage } from '@nestjs/throttler';
import { Public } from '../auth/auth.decorators';
import { RedisThrottlerStorage } from '../rate-limit/redis-throttler.storage';
import { NotReadyError } from '../common/not-ready.error';
import { NoQueryParams } from '../common/validation';
import { ShutdownDrain } from './shutdown-drain';

@Public()
// A query parameter of any name is 400 here (none is taken).
@ApiProblems(400)
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    @Inject(ThrottlerStorage) private readonly counters: ThrottlerStorage,
    private readonly indicators: HealthIndicatorService,
    private readonly drain: ShutdownDrain,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  @HealthCheck()
  live(@NoQueryParams() _query: unknown): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /**
   * The process can serve requests: the database answers (503 otherwise). With REDIS_URL, Redis is reported too,
   * as `up` or `degraded`: without it the service still works (rate limits count per instance), so it is no
   * reason to take the instance out of rotation. From SIGTERM until the process exits it is 503 (`shutdown` down),
   * so that a load balancer stops sending before the port closes. A 503 here is an answer: it is not logged as an error.
   */
  @Get('ready')
  @HealthCheck()
  async ready(@NoQueryParams() _query: unknown): Promise<HealthCheckResult> {
    const result = await this.health
      .check([
        () => {
          const shutdown = this.indicators.check('shutdown');
          return this.drain.active ? shutdown.down('the instance is shutting down') : shutdown.up();
        },
        () => this.db.pingCheck('database', { timeout: 1_500 }),
      ])
      .catch((error: unknown) => {
        // Terminus's 503: the check's answer, not a fault (logged neither by the problem filter nor as an error).
        throw error instanceof ServiceUnavailableException ? new NotReadyError(this.drain.active) : error;
      });
    if (this.counters instanceof RedisThrottlerStorage) {
      // Terminus knows only up and down; degraded is reported next to them without failing the check.
      const redis = (await this.counters.health()) as unknown as HealthCheckResult['details'][string];
      result.details.redis = redis;
      if (result.info) result.info.redis = redis;
    }
    return result;
  }
}
