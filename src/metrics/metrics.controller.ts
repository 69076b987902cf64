import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiProduces, ApiResponse } from '@nestjs/swagger';
import { Registry } from 'prom-client';
import { Public } from '../auth/auth.decorators';
import { ApiProblem, ApiProblems } from '../common/openapi';
import { NoQueryParams } from '../common/validation';
import { MetricsAccessGuard } from './metrics-access.guard';
import { MetricsService } from './metrics.service';

/** `GET /metrics` for Prometheus. Public to the bearer guard: {@link MetricsAccessGuard} decides who reads it. */
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @UseGuards(MetricsAccessGuard)
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  @ApiProduces('text/plain')
  @ApiResponse({
    status: 200,
    description: 'The metrics in the Prometheus text format (version 0.0.4)',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  @ApiProblems(400)
  @ApiProblem(403, 'Neither from an address of METRICS_ALLOW nor with Authorization: Bearer <METRICS_TOKEN>')
  @ApiProblem(404, 'METRICS=off')
  scrape(@NoQueryParams() _query: unknown): Promise<string> {
    return this.metrics.scrape();
  }
}
