import { Controller, Get } from '@nestjs/common';
import { HealthCheck, type HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../auth/auth.decorators';
import { NoQueryParams } from '../common/validation';

@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  @HealthCheck()
  live(@NoQueryParams() _query: unknown): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /** The process can serve requests: the database answers (503 otherwise). */
  @Get('ready')
  @HealthCheck()
  ready(@NoQueryParams() _query: unknown): Promise<HealthCheckResult> {
    return this.health.check([() => this.db.pingCheck('database', { timeout: 1_500 })]);
  }
}
