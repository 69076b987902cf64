import { Global, Module } from '@nestjs/common';
import { AppConfigModule } from '../config/config.module';
import { MetricsAccessGuard } from './metrics-access.guard';
import { MetricsConfig } from './metrics.config';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * Prometheus metrics at `GET /metrics`. Global, because the modules that count something (the token endpoint,
 * login, rate limits) report to its {@link MetricsService}; the HTTP layer (`configureApp`) measures every request.
 */
@Global()
@Module({
  imports: [AppConfigModule.forFeature(MetricsConfig)],
  controllers: [MetricsController],
  providers: [MetricsService, MetricsAccessGuard],
  exports: [MetricsService],
})
export class MetricsModule {}
