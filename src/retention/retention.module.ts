import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AppConfigModule } from '../config/config.module';
import { RetentionConfig } from './retention.config';
import { RetentionService } from './retention.service';

/**
 * The retention job: deletes what nothing can use any more, from the prune steps that each module contributes with
 * `@ExpiringRows()` (see `retention-step.ts`). It imports no feature; imported by the service only (the command
 * line prunes nothing).
 */
@Module({
  imports: [DiscoveryModule, AppConfigModule.forFeature(RetentionConfig)],
  providers: [RetentionService],
  exports: [RetentionService],
})
export class RetentionModule {}
